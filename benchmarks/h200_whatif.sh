#!/usr/bin/env bash
# `specmon whatif` against real SGLang 0.5.17 NGRAM on the lent H200 (no network there): the
# prediction from --speculative-num-draft-tokens 4 (3 drafts per step) for 3 and 2 draft tokens,
# against benches of servers launched with 3 and 2. Run after `bash ci/h200/install_sglang.sh`
# (SGLang's wheels in /tmp/site), carrying .whlB, .model and .whlS, like
# benchmarks/h200_session.sh. About 5 minutes: the plain server, then one speculative server at
# a time beside it (4, 3, 2 draft tokens), benches of 1 + 5 runs × 512 tokens. Writes to $OUT:
# whatif_4.json (the prediction), bench_plain.json, bench_3.json, bench_2.json,
# whatif_results.json (predicted vs measured per draft-token count), whatif_4.txt (the table
# as printed), the commands' logs and the servers' log tails.
set -u
MEM_FRACTION=0.2
. "$(dirname "$0")/h200_servers.sh"
# This checkout's specmon first (the what-if is newer than a wheel in .whlS may be); its
# dependencies from .whlS.
export PYTHONPATH=$PWD:/tmp/specmon-site PYTHONUNBUFFERED=1
DB=/tmp/whatif.db; rm -f "$DB"
PROTOCOL="--runs 5 --warmup 1 --max-tokens 512 --read-timeout 60"
specmon() { python3 -m specmon "$@"; }

# One speculative server at a time beside the plain one (SGLang sizes its memory from what is
# free at its start: servers started together misjudge it, and a fraction must exceed what the
# others already hold).
start plain 30001
wait_ready plain 30001 && el "plain ready" || el "plain NOT ready"
specmon bench http://127.0.0.1:30001 $PROTOCOL --json --db "$DB" > "$OUT/bench_plain.json" \
  2> "$OUT/bench_plain.log"; el "baseline benched (exit $?)"
for n in 4 3 2; do
  start "spec$n" "3000$n" --mem-fraction-static 0.35 --speculative-algorithm NGRAM \
    --speculative-num-draft-tokens "$n"
  wait_ready "spec$n" "3000$n" && el "spec$n ready" || el "spec$n NOT ready"
  if [ "$n" = 4 ]; then
    # The what-if from 4 draft tokens first: the benches at 3 and 2 are not in its store yet.
    specmon whatif http://127.0.0.1:30004 $PROTOCOL --json --db "$DB" > "$OUT/whatif_4.json" \
      2> "$OUT/whatif_4.log"; el "whatif from 4 draft tokens (exit $?)"
    specmon whatif http://127.0.0.1:30004 $PROTOCOL --db "$DB" > "$OUT/whatif_4.txt" 2>&1
  else
    specmon bench "http://127.0.0.1:3000$n" $PROTOCOL --json --db "$DB" \
      > "$OUT/bench_$n.json" 2> "$OUT/bench_$n.log"; el "bench at $n draft tokens (exit $?)"
  fi
  stop "spec$n"
done
stop plain
python3 - "$OUT" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
whatif = json.loads((out / "whatif_4.json").read_text())
by_k = {p["draft_tokens"]: p for p in whatif["predictions"]}
rows = []
for n in (3, 2):  # --speculative-num-draft-tokens n: n - 1 drafts per step
    try:
        bench = json.loads((out / f"bench_{n}.json").read_text())
    except (OSError, ValueError):
        rows.append({"num_draft_tokens": n, "error": "no bench"})
        continue
    p, m = by_k[n - 1], bench["pooled"]
    rows.append({
        "num_draft_tokens": n, "draft_tokens": n - 1,
        "predicted": {k: p[k] for k in ("decode_tok_s", "decode_tok_s_low", "decode_tok_s_high",
                                         "tokens_per_step", "cycle_ms", "speedup")},
        "measured": {k: m[k] for k in ("decode_tok_s", "accept_length", "cycle_ms")},
        "decode_error": p["decode_tok_s"] / m["decode_tok_s"] - 1,
        "tokens_per_step_error": p["tokens_per_step"] / m["accept_length"] - 1,
        "cycle_error": p["cycle_ms"] / m["cycle_ms"] - 1,
    })
summary = {"from_num_draft_tokens": 4, "cycle_model": whatif.get("cycle_model"),
           "acceptance_by_position": whatif.get("acceptance_by_position"),
           "now": by_k.get(3), "rows": rows}
(out / "whatif_results.json").write_text(json.dumps(summary, indent=2))
print(json.dumps(rows, indent=1))
EOF
# At most 8 files come back from the device: the logs travel as one archive.
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.log.tail 2>/dev/null && rm -f ./*.log ./*.log.tail)
rm -f "$DB"; ls -la "$OUT"; el "done"
