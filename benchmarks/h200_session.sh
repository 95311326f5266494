#!/usr/bin/env bash
# specmon against real SGLang 0.5.17 on the lent H200 (no network there). Second of two
# commands run back to back, after `bash ci/h200/install_sglang.sh` (which installs the
# SGLang wheels of .whlA into /tmp/site); carry .whlB, .model and .whlS (specmon's
# wheel and its dependencies for Python 3.12, kept apart from SGLang's in /tmp/specmon-site).
# Starts a speculative (NGRAM) and a plain server one after the other, runs
# benchmarks/real_server_session.py and the GPU proof, writes everything to $OUT.
set -u
. "$(dirname "$0")/h200_servers.sh"
start spec 30000 --speculative-algorithm NGRAM --speculative-num-draft-tokens 4
wait_ready spec 30000 && el "spec ready" || el "spec NOT ready"
start plain 30001
wait_ready plain 30001 && el "plain ready" || el "plain NOT ready"
export PYTHONPATH=/tmp/specmon-site:$PWD PYTHONUNBUFFERED=1
python3 benchmarks/real_server_session.py --spec http://127.0.0.1:30000 \
  --plain http://127.0.0.1:30001 --out "$OUT" 2>&1 | tee "$OUT/session.log" | cut -c1-240
el "session done (exit ${PIPESTATUS[0]})"
if [ -f benchmarks/gpu_proof.sh ]; then
  SERVER_PORT=30000 bash benchmarks/gpu_proof.sh 2>&1 | tee "$OUT/gpu_proof.log" | cut -c1-240
  el "gpu proof done"
fi
stop spec; stop plain
rm -f "$OUT/specmon.db"; ls -la "$OUT"; el "done"
