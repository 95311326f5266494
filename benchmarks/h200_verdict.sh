#!/usr/bin/env bash
# Verdicts over time against real SGLang 0.5.17 (NGRAM) on the lent H200 (no network there):
# `check`'s sequential probing to a verdict against a stored plain baseline, and the exporter
# withdrawing its figures when the baseline server and then the target are killed. Second of
# two commands run back to back, as for benchmarks/h200_session.sh:
#
#   device run 1 (carry .whlA):              bash ci/h200/install_sglang.sh
#   device run 2 (carry .whlB .model .whlS): bash benchmarks/h200_verdict.sh
#
# specmon runs from this checkout (first on PYTHONPATH); .whlS holds its dependencies for
# Python 3.12. Writes to $OUT: plain_bench.json, check-N.json (one per check), exporter-*.txt
# (the exporter's /metrics before and after each kill), verdict.log, server log tails.
# Knobs: CHECKS (default 5), RUNS (baseline runs, default 3).
set -u
. "$(dirname "$0")/h200_servers.sh"
CHECKS=${CHECKS:-5} RUNS=${RUNS:-3}
start spec 30000 --speculative-algorithm NGRAM --speculative-num-draft-tokens 4
wait_ready spec 30000 && el "spec ready" || el "spec NOT ready"
start plain 30001
wait_ready plain 30001 && el "plain ready" || el "plain NOT ready"
export PYTHONPATH=$PWD:/tmp/specmon-site PYTHONUNBUFFERED=1
DB=/tmp/verdict.db; rm -f "$DB"
S=http://127.0.0.1:30000 P=http://127.0.0.1:30001
{
  python3 -m specmon bench "$P" --runs "$RUNS" --max-tokens 200 --db "$DB" --json \
    > "$OUT/plain_bench.json"
  el "plain baseline benched (exit $?)"
  for i in $(seq 1 "$CHECKS"); do
    python3 -m specmon check "$S" --db "$DB" --json > "$OUT/check-$i.json" 2> "$OUT/check-$i.err"
    el "check $i (exit $?): $(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
print(len(d.get('probes') or []), 'probes', {k: d.get(k) for k in
      ('verdict', 'verdict_after_s', 'speedup', 'speedup_low', 'speedup_high', 'decode_tok_s')})" \
      "$OUT/check-$i.json" 2>&1 | cut -c1-300)"
  done
  # The exporter: baseline from the store, probes every 3 s; kill the baseline server, then the
  # target, scraping before and after each.
  python3 -m specmon exporter --url "$S" --baseline-url "$P" --db "$DB" --probe-every 3 --probe-tokens 200 \
    --listen 127.0.0.1:9835 > "$OUT/exporter.log" 2>&1 &
  exp=$!
  sleep 20; curl -s 127.0.0.1:9835/metrics | grep '^specmon_' > "$OUT/exporter-1-both-up.txt"
  el "exporter, both up: $(grep -E '^specmon_(speedup_ratio|baseline_state|target_up)' "$OUT/exporter-1-both-up.txt" | tr '\n' ' ')"
  stop plain; sleep 10
  curl -s 127.0.0.1:9835/metrics | grep '^specmon_' > "$OUT/exporter-2-baseline-killed.txt"
  el "baseline killed: $(grep -E '^specmon_(speedup_ratio|baseline_state|target_up)' "$OUT/exporter-2-baseline-killed.txt" | tr '\n' ' ')"
  stop spec; sleep 10
  curl -s 127.0.0.1:9835/metrics | grep '^specmon_' > "$OUT/exporter-3-target-killed.txt"
  el "target killed: $(grep -cE '^specmon_(speedup_ratio|probe_decode_tokens_per_second|break_even)' \
    "$OUT/exporter-3-target-killed.txt") speedup/decode/break-even series left"
  kill "$exp"; wait "$exp" 2>/dev/null
} 2>&1 | tee "$OUT/verdict.log" | cut -c1-300
# At most 8 files come back from the device: everything but the log travels as one archive.
(cd "$OUT" && tar czf /tmp/verdict-files.tgz --exclude verdict.log . && find . -type f ! -name verdict.log -delete \
  && mv /tmp/verdict-files.tgz .)
el "done"
