#!/usr/bin/env bash
# `specmon ab` against real SGLang 0.5.17 (NGRAM) on the lent H200 (no network there): the
# managed A/B at 1, 4 and 16 streams, with a sweep of the draft tokens. Second of two commands
# run back to back, after `bash ci/h200/install_sglang.sh` (which installs the SGLang
# wheels of .whlA into /tmp/site); carry .whlB, .model and .whlS (specmon's
# dependencies for Python 3.12, into /tmp/specmon-site), as for benchmarks/h200_session.sh.
#
#   device run 1 (carry .whlA):              bash ci/h200/install_sglang.sh
#   device run 2 (carry .whlB .model .whlS): bash benchmarks/h200_ab.sh
#
# specmon runs from this checkout (first on PYTHONPATH), so the wheel in .whlS need not hold
# `ab`. The servers are the tiny model of h200_session.sh with the flags that work there; the
# speculative command is NGRAM with 4 draft tokens, and `--sweep draft-tokens=…` launches one
# server per configuration after the round's baseline (1 baseline + 3 configurations = 4
# launches; SGLang's first start compiles Triton kernels for ~2 min, later ones ~30-60 s).
# Writes to $OUT: split_sglang.txt (the split by SGLang's own parser, the `specmon[sglang]`
# path), ab.json (`ab --json`), ab.log (the tables and progress), ab.db (the store: every run), server log tails.
# Knobs: SWEEP (default 2,4,8; empty: no sweep, the command's own config), ROUNDS (default 1),
# RUNS (default 3), TOKENS (default 192).
# Bounded to fit one device command (600 s): the split 90 s, the A/B 470 s (`timeout` stops it
# with SIGTERM: `ab` then stops its server and saves nothing).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; LOGS=/tmp/ab-logs; rm -rf "$LOGS"; mkdir -p "$LOGS"
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
pipt() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
           --target "$1" "${@:2}" 2>&1 | grep -v 'already exists' | tail -2; }
pipt /tmp/site .whlB/*.whl
pipt /tmp/specmon-site .whlS/*.whl
SWEEP=${SWEEP-2,4,8} ROUNDS=${ROUNDS:-1} RUNS=${RUNS:-3} TOKENS=${TOKENS:-192}
# The server: SGLang's site on its path only; --max-running-requests 16 so that 16 streams run
# at once (it is given, so `ab` pins nothing else; --mem-fraction-static too).
SERVER=(env PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python3 -m
  sglang.launch_server --model-path .model/tiny-llama --served-model-name tiny-llama
  --host 127.0.0.1 --port 30000 --enable-metrics --attention-backend triton
  --sampling-backend pytorch --grammar-backend none --disable-cuda-graph
  --mem-fraction-static 0.25 --max-running-requests 16 --context-length 2048
  --speculative-algorithm NGRAM --speculative-num-draft-tokens 4)
export PYTHONUNBUFFERED=1
# 1. The split by SGLang's own parser (specmon[sglang]): SGLang's site after specmon's.
PYTHONPATH=$PWD:/tmp/specmon-site:/tmp/site timeout 90 python3 -m specmon ab --dry-run \
  ${SWEEP:+--sweep "draft-tokens=$SWEEP"} -- "${SERVER[@]}" > "$OUT/split_sglang.txt" 2>&1
el "split by SGLang's parser (exit $?): $(head -1 "$OUT/split_sglang.txt")"
# 2. The A/B and the sweep (the maintained list splits here: specmon's own process stays light).
PYTHONPATH=$PWD:/tmp/specmon-site timeout 470 python3 -m specmon ab --json \
  --concurrency 1,4,16 --rounds "$ROUNDS" --runs "$RUNS" --max-tokens "$TOKENS" \
  ${SWEEP:+--sweep "draft-tokens=$SWEEP"} --health-timeout 300 --read-timeout 120 --logs "$LOGS" \
  --db "$OUT/ab.db" \
  -- "${SERVER[@]}" > "$OUT/ab.json" 2> "$OUT/ab.log"
code=$?
el "ab done (exit $code)"
grep -E '^ +[0-9]+ |^Configuration|^Crossover|^Best|^  +[0-9]+ streams|^streams|^Saved|error' \
  "$OUT/ab.log" | cut -c1-200
for f in "$LOGS"/*.log; do
  [ -f "$f" ] && grep -v -E 'GET /health|GET /metrics' "$f" | tail -15 > "$OUT/$(basename "$f").tail"
done
# Nothing may be left running: every server's process group was stopped by `ab`.
pgrep -af sglang.launch_server | grep -v pgrep && el "LEFT RUNNING (above)" || el "no server left"
# The store comes back too (every run, to recompute the figures from).
# At most 8 files come back from the device: the server logs travel as one archive.
(cd "$OUT" && tar czf server-logs.tgz ./*.log.tail 2>/dev/null && rm -f ./*.log.tail)
ls -la "$OUT"; el "done"
