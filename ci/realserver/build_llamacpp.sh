#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (CPU, static) from the source vendored in the PyPI sdist of
# llama-cpp-python, unless the cache already holds it. About 8 minutes on 2 cores; the result is
# one ~10 MB binary. (llama-cpp-python's own Python server is of no use here: no /metrics.)
# Needs cmake >= 3.14, ninja and a C++17 compiler.
set -euo pipefail
. "$(dirname "$0")/env.sh"
if [ -f "$LLAMA_DIR/.complete" ]; then
  say "llama-server: cached in $LLAMA_DIR"
  exit 0
fi
say "llama-server: building into $LLAMA_DIR"
rm -rf "$LLAMA_DIR"
WORK=$LLAMA_DIR/work
mkdir -p "$WORK"
python3 -m pip download -q --no-deps --no-binary=:all: \
  "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$WORK"
tar -xzf "$WORK/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$WORK"
SRC=$WORK/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
cmake -S "$SRC" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_TOOLS=ON > "$WORK/cmake.log"
cmake --build "$WORK/build" --target llama-server -j"$(nproc)" > "$WORK/build.log"
cp "$WORK/build/bin/llama-server" "$LLAMA_SERVER"
rm -rf "$WORK"
"$LLAMA_SERVER" --version 2>&1 | tail -2
touch "$LLAMA_DIR/.complete"
say "llama-server: built"
