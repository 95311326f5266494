#!/usr/bin/env bash
# Make the tiny models the real servers serve, unless the cache holds them: a random Llama for
# vLLM (Hugging Face format), and as GGUF for llama.cpp a target plus a draft that is the target
# with 10% noise (about 63% of drafts accepted). Needs the vLLM environment (torch, transformers,
# gguf). About 10 seconds.
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
"$PY" "$REALSERVER_DIR/make_tiny_model.py" "$MODELS_DIR/tiny-llama" --seed 0
"$PY" "$REALSERVER_DIR/make_tiny_gguf.py" "$MODELS_DIR/tiny-llama" "$MODELS_DIR/target.gguf" --seed 0
"$PY" "$REALSERVER_DIR/make_tiny_gguf.py" "$MODELS_DIR/tiny-llama" "$MODELS_DIR/draft.gguf" \
  --seed 0 --perturb 0.1
touch "$MODELS_DIR/.complete"
say "tiny models: made"
