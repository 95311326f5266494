"""The what-if: what the server would decode at other draft lengths, from what it measured.

One package, in the order its parts build on each other (each may import those above it):

- `prediction`: the model (`what_if`): a cycle time per draft length and the acceptance per
  draft position give each length's accept length, decode tok/s and speedup, with intervals.
- `inputs`: what the model is fed from pooled runs and their baselines (`predict`), or why it
  refuses (`refusal`); `by_band`: the same per load band of a server's traffic.
- `advice`: the advisor's recommendation from a prediction (`advise`).
- `text`: how every surface words it (the table's rows, the summary, the advisor's flags).
- `live`: the dashboard's what-if from a session's live state (`live_what_if`).
- `measure`: `specmon whatif`'s measurement: snapshots at draft lengths, then the model.

Its command is `specmon.cli.whatif` and its screen `specmon.ui.screens.whatif`, beside every
other command and screen (only `specmon.ui` imports Textual). It reads `analysis`, `session`,
`measure`, `sources` and `storage`; nothing under them imports it (the layers, .importlinter).
"""
