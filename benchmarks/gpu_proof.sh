#!/usr/bin/env bash
# GPU proof (docs/gpus.md): specmon's NVML readings vs nvidia-smi vs `specmon agent` scraped
# through the DCGM source, idle and under a PyTorch load. Run on the GPU box from the repository
# root. specmon must be importable; if not, its wheels are installed from .whlS/ (specmon and
# the dependencies the box lacks, for its Python) into /tmp/specmon-site.
# Env: OUT (result folder, default ./gpu-proof-out), SERVER_PORT (an LLM server's port on the
# box, optional: adds the server-process checks). Exit: 0 agree, 1 disagree, 2 could not run.
set -u
OUT=${OUT:-$PWD/gpu-proof-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ! python3 -c 'import specmon.agent' 2>/dev/null; then
  if [ ! -d .whlS ]; then echo "specmon is not importable and there is no .whlS/"; exit 2; fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/specmon-site .whlS/*.whl 2>&1 | grep -v 'already exists' | tail -2
  export PYTHONPATH=/tmp/specmon-site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c 'import sys, specmon, pynvml, psutil, aiohttp, prometheus_client as p
print("python", sys.version.split()[0], "specmon", specmon.__version__, "from", specmon.__file__)
print("nvidia-ml-py", getattr(pynvml, "__version__", "?"), "psutil", psutil.__version__)'
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 benchmarks/gpu_proof.py --out "$OUT" ${SERVER_PORT:+--server-port "$SERVER_PORT"}
