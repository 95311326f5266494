#!/usr/bin/env bash
# Run a command with the real servers up, then stop them, e.g. from the repository's root:
#   bash ci/realserver/run.sh .venv/bin/pytest -m realserver
#   bash ci/realserver/run.sh bash -c '.venv/bin/specmon bench "$SPECMON_VLLM_URL"'
# The first run installs and builds into the cache (about 10 minutes on 2 cores); later ones
# start the servers in about 30 seconds.
set -euo pipefail
# shellcheck source=servers.sh
. "$(dirname "$0")/servers.sh"
trap realserver_down EXIT
realserver_up
export SPECMON_REALSERVER_REQUIRED=1
"$@"
