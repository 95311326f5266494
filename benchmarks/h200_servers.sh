# Sourced by the benchmarks/h200_*.sh scripts: installs the carried wheels (SGLang's second
# half from .whlB into /tmp/site, specmon's dependencies from .whlS into /tmp/specmon-site) and
# defines how a real SGLang server on the tiny model starts, is waited for and is stopped.
# MEM_FRACTION (default 0.25) is each server's --mem-fraction-static.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; LOGS=/tmp/sglang-logs; mkdir -p "$LOGS"
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
pipt() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
           --target "$1" "${@:2}" 2>&1 | grep -v 'already exists' | tail -2; }
pipt /tmp/site .whlB/*.whl
pipt /tmp/specmon-site .whlS/*.whl
COMMON="--model-path .model/tiny-llama --served-model-name tiny-llama --host 127.0.0.1
 --enable-metrics --attention-backend triton --sampling-backend pytorch --grammar-backend none
 --disable-cuda-graph --mem-fraction-static ${MEM_FRACTION:-0.25} --max-running-requests 8
 --context-length 2048"
start() { # name port extra...
  local name=$1 port=$2; shift 2
  # shellcheck disable=SC2086
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
stop() { # name: its process group stopped, its memory freed, its log's tail into $OUT
  local p; p=$(cat "$LOGS/$1.pid")
  kill -TERM -- -"$p" 2>/dev/null
  for _ in $(seq 1 60); do kill -0 -- -"$p" 2>/dev/null || break; sleep 0.5; done
  grep -v -E 'GET /health|GET /metrics' "$LOGS/$1.log" | tail -30 > "$OUT/$1.log.tail"
}
