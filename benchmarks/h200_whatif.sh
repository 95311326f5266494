#!/usr/bin/env bash
# `specmon whatif` against real SGLang 0.5.17 NGRAM on the lent H200 (no network there): the
# prediction from --speculative-num-draft-tokens 4 (3 drafts per step) for 3 and 2 draft tokens,
# against benches of servers launched with 3 and 2. Run after `bash .realserver/device_sglang.sh A`
# (SGLang's wheels in /tmp/site), carrying .realserver, .whlB, .model and .whlS, like
# benchmarks/h200_session.sh. About 3 minutes: four servers of the tiny model launched together,
# five benches of 1 + 5 runs × 512 tokens. Writes to $OUT: whatif_4.json (the prediction),
# bench_plain.json, bench_3.json, bench_2.json, whatif_results.json (predicted vs measured per
# draft-token count), whatif_4_fitted.txt (the what-if again, its cycle fitted through the
# benches at 3 and 2), the commands' logs and the servers' log tails.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; LOGS=/tmp/sglang-logs; mkdir -p "$LOGS"
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
pipt() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
           --target "$1" "${@:2}" 2>&1 | grep -v 'already exists' | tail -2; }
pipt /tmp/site .whlB/*.whl
pipt /tmp/specmon-site .whlS/*.whl
COMMON="--model-path .model/tiny-llama --served-model-name tiny-llama --host 127.0.0.1
 --enable-metrics --attention-backend triton --sampling-backend pytorch --grammar-backend none
 --disable-cuda-graph --mem-fraction-static 0.2 --max-running-requests 8 --context-length 2048"
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
stop() { # name
  local p; p=$(cat "$LOGS/$1.pid")
  kill -TERM -- -"$p" 2>/dev/null
  grep -v -E 'GET /health|GET /metrics' "$LOGS/$1.log" | tail -30 > "$OUT/$1.log.tail"
}
# This checkout's specmon first (the what-if is newer than a wheel in .whlS may be); its
# dependencies from .whlS.
export PYTHONPATH=$PWD:/tmp/specmon-site PYTHONUNBUFFERED=1
DB=/tmp/whatif.db; rm -f "$DB"
PROTOCOL="--runs 5 --warmup 1 --max-tokens 512 --read-timeout 60"
specmon() { python3 -m specmon "$@"; }

# All four at once (a tiny model: 0.2 of the GPU's memory each), so that one launch time is paid;
# the idle ones do not draw on the GPU while another is benched.
start plain 30001
start spec4 30004 --speculative-algorithm NGRAM --speculative-num-draft-tokens 4
start spec3 30003 --speculative-algorithm NGRAM --speculative-num-draft-tokens 3
start spec2 30002 --speculative-algorithm NGRAM --speculative-num-draft-tokens 2
for n in plain:30001 spec4:30004 spec3:30003 spec2:30002; do
  wait_ready "${n%%:*}" "${n##*:}" && el "${n%%:*} ready" || el "${n%%:*} NOT ready"
done
specmon bench http://127.0.0.1:30001 $PROTOCOL --json --db "$DB" > "$OUT/bench_plain.json" \
  2> "$OUT/bench_plain.log"; el "baseline benched (exit $?)"
# The what-if from 4 draft tokens first: the benches at 3 and 2 must not be in its store yet.
specmon whatif http://127.0.0.1:30004 $PROTOCOL --json --db "$DB" > "$OUT/whatif_4.json" \
  2> "$OUT/whatif_4.log"; el "whatif from 4 draft tokens (exit $?)"
for n in 3 2; do
  specmon bench "http://127.0.0.1:3000$n" $PROTOCOL --json --db "$DB" \
    > "$OUT/bench_$n.json" 2> "$OUT/bench_$n.log"; el "bench at $n draft tokens (exit $?)"
done
# With the benches at 3 and 2 in the store, the cycle model becomes a fitted line.
specmon whatif http://127.0.0.1:30004 $PROTOCOL --db "$DB" > "$OUT/whatif_4_fitted.txt" 2>&1
el "whatif from 4 with the benches at 3 and 2 (exit $?)"
for n in plain spec4 spec3 spec2; do stop "$n"; done
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
rm -f "$DB"; ls -la "$OUT"; el "done"
