#!/usr/bin/env bash
# Device command 1 on the lent H200 (no network there): install SGLang 0.5.17 and what it
# needs from .whlA (made by ci/h200/prepare_wheels.sh) into /tmp/site, and check that its
# modules import. Run from the root of the copied checkout, carrying .whlA:
#   bash ci/h200/install_sglang.sh
# Device command 2, run right after while the machine is warm (/tmp survives while it is), is
# one of benchmarks/h200_*.sh: it installs .whlB (flashinfer, a trimmed sglang-kernel) and
# starts the servers. Why 0.5.17: it is the newest SGLang pinned to torch 2.11.0, the torch the
# device image has (0.5.18+ pin torch 2.13/2.14, and sglang-kernel is built against that exact
# torch).
set -u
SITE=/tmp/site
export PYTHONPATH=$SITE HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }

pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
           --upgrade --target "$SITE" "$@" 2>&1 | grep -v 'already exists' | tail -3; }

importcheck() {
python3 - <<'PY' 2>&1 | grep -v -i warn
import importlib, time
mods = ["sglang.launch_server", "sglang.srt.entrypoints.http_server",
        "sglang.srt.managers.scheduler", "sglang.srt.managers.tokenizer_manager",
        "sglang.srt.managers.detokenizer_manager", "sglang.srt.model_executor.model_runner",
        "sglang.srt.models.llama", "sglang.srt.layers.attention.triton_backend",
        "sglang.srt.function_call.function_call_parser",
        "sglang.srt.entrypoints.openai.serving_chat"]
t = time.time()
for m in mods:
    try:
        importlib.import_module(m)
        print("ok  ", m)
    except Exception as e:
        print("FAIL", m, type(e).__name__, str(e)[:200])
print(f"imports took {time.time()-t:.1f}s")
PY
}

el "installing $(ls .whlA | wc -l) wheels"
pipi .whlA/*.whl
el "installed; $(du -sh $SITE | cut -f1) in $SITE"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import sys,torch,transformers,tokenizers,triton; print(sys.version.split()[0], torch.__version__, torch.version.cuda, "tf", transformers.__version__, "tok", tokenizers.__version__, "triton", triton.__version__)'
for c in gcc g++ nvcc ninja; do printf '%s: %s\n' $c "$(command -v $c)"; done
importcheck
el "done"
