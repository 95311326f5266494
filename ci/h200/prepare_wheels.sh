#!/usr/bin/env bash
# Build the two wheel folders (and the tiny model) that SGLang 0.5.17 needs on the lent H200,
# which has no network: .whlA (installed by ci/h200/install_sglang.sh, device command 1) and
# .whlB (installed by benchmarks/h200_*.sh, device command 2), in the checkout's root, in
# folders ignored through .git/info/exclude. One command's carry is at most 64 MiB, hence two.
# Run here (PyPI reachable), from the checkout's root, with a Python that has torch and
# transformers for the model (the vLLM environment of ci/realserver has them):
#   PY=<that python> bash ci/h200/prepare_wheels.sh
# Never commit these folders.
set -euo pipefail
ROOT=$(pwd)
grep -q '^/.whl\*/$' .git/info/exclude || echo '/.whl*/' >> .git/info/exclude
grep -q '^/.model/$' .git/info/exclude || echo '/.model/' >> .git/info/exclude
A=$ROOT/.whlA; B=$ROOT/.whlB; rm -rf "$A" "$B"; mkdir -p "$A" "$B"
PLAT="--only-binary=:all: --python-version 3.12 --implementation cp
 --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64
 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64
 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
 --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64
 --platform manylinux1_x86_64 --platform any"
dl() { python3 -m pip download -q --no-deps $PLAT -d "$@"; }

# Stage A (~54 MB): sglang itself, the transformers/tokenizers it pins, and the
# pure-python/small deps the device image lacks (found by import-closure tests).
dl "$A" sglang==0.5.17 transformers==5.12.1 tokenizers==0.22.2 \
  pydantic==2.12.5 pydantic-core==2.41.5 annotated-types typing-inspection \
  fastapi==0.136.3 starlette uvicorn python-multipart orjson pyzmq msgspec \
  setproctitle pybase64 partial-json-parser gguf apache-tvm-ffi==0.1.11 dill \
  distro soundfile cffi pycparser zstandard watchfiles sniffio loguru \
  openai==2.6.1 jiter ipython traitlets compressed-tensors==0.12.2 \
  xgrammar==0.2.8 interegular jsonschema jsonschema-specifications referencing rpds-py
# (xgrammar 0.2.1, which sglang 0.5.17 pins, is a 45 MB wheel; 0.2.8 is 1.3 MB
#  and provides the StructuralTag API sglang imports at start.)

# Stage B (~30 MB): flashinfer (imported at start on CUDA) and sglang-kernel
# 0.4.5 TRIMMED: the 383 MB wheel is 1.1 GB of FA3 (flash_ops.abi3.so) plus
# sm100/flashmla/infllm objects; with --attention-backend triton only
# sgl_kernel/sm90/common_ops is used, so we repack without the rest.
dl "$B" flashinfer-python==0.6.15.post1
TMP=$(mktemp -d)
dl "$TMP" sglang-kernel==0.4.5
( cd "$TMP" && mkdir x && cd x && unzip -q ../sglang_kernel-0.4.5-*.whl \
    -x 'sgl_kernel/flash_ops.abi3.so' 'sgl_kernel/flashmla_ops.abi3.so' \
       'sgl_kernel/infllm_ops*.so' 'sgl_kernel/sm100/*' \
  && zip -q -r -9 "$B/sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl" . )
rm -rf "$TMP"

# Tiny random model (needs torch+transformers+tokenizers here, e.g. the vLLM venv)
PY=${PY:?a python with torch and transformers}
mkdir -p .model
"$PY" "$(dirname "$0")"/../realserver/make_tiny_model.py .model/tiny-llama >/dev/null
du -sh "$A" "$B" .model
