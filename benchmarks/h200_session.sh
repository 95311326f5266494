#!/usr/bin/env bash
# specmon against real SGLang 0.5.17 on the lent H200 (no network there). Second of two
# commands run back to back, after `bash .realserver/device_sglang.sh A` (which installs the
# SGLang wheels of .whlA into /tmp/site); carry .realserver, .whlB, .model and .whlS (specmon's
# wheel and its dependencies for Python 3.12, kept apart from SGLang's in /tmp/specmon-site).
# Starts a speculative (NGRAM) and a plain server one after the other, runs
# benchmarks/real_server_session.py and the GPU proof, writes everything to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; LOGS=/tmp/sglang-logs; mkdir -p "$LOGS"
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
pipt() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
           --target "$1" "${@:2}" 2>&1 | grep -v 'already exists' | tail -2; }
pipt /tmp/site .whlB/*.whl
pipt /tmp/specmon-site .whlS/*.whl
COMMON="--model-path .model/tiny-llama --served-model-name tiny-llama --host 127.0.0.1
 --enable-metrics --attention-backend triton --sampling-backend pytorch --grammar-backend none
 --disable-cuda-graph --mem-fraction-static 0.25 --max-running-requests 8 --context-length 2048"
start() { # name port extra...
  local name=$1 port=$2; shift 2
  PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 setsid python3 -m \
    sglang.launch_server $COMMON --port "$port" "$@" > "$LOGS/$name.log" 2>&1 &
  echo $! > "$LOGS/$name.pid"
}
wait_ready() { # name port
  local pid; pid=$(cat "$LOGS/$1.pid")
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$2/health" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { tail -5 "$LOGS/$1.log"; return 1; }
    sleep 1
  done; return 1
}
start spec 30000 --speculative-algorithm NGRAM --speculative-num-draft-tokens 4
wait_ready spec 30000 && el "spec ready" || el "spec NOT ready"
start plain 30001
wait_ready plain 30001 && el "plain ready" || el "plain NOT ready"
export PYTHONPATH=/tmp/specmon-site:$PWD PYTHONUNBUFFERED=1
python3 benchmarks/real_server_session.py --spec http://127.0.0.1:30000 \
  --plain http://127.0.0.1:30001 --out "$OUT" 2>&1 | tee "$OUT/session.log" | cut -c1-240
el "session done (exit ${PIPESTATUS[0]})"
if [ -f benchmarks/gpu_proof.sh ]; then
  SERVER_PORT=30000 bash benchmarks/gpu_proof.sh 2>&1 | tee "$OUT/gpu_proof.log" | cut -c1-240
  el "gpu proof done"
fi
for n in spec plain; do
  p=$(cat "$LOGS/$n.pid"); kill -TERM -- -"$p" 2>/dev/null
  grep -v -E 'GET /health|GET /metrics' "$LOGS/$n.log" | tail -30 > "$OUT/$n.log.tail"
done
rm -f "$OUT/specmon.db"; ls -la "$OUT"; el "done"
