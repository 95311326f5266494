"""How stored and measured figures are written out for people and scripts: `check`'s
findings and JSON, `snapshots compare`, the snapshot table's exports, bench text, the what-if's
wording."""
