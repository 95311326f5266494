#!/usr/bin/env bash
# Refresh ci/requirements-dev.lock: every package the dev, web and lint extras install, each at one
# exact version, resolved today from pyproject.toml's ranges. .ci/run installs through it
# (PIP_CONSTRAINT), so CI tests what the last refresh resolved, not whatever a registry serves
# that day; users keep pyproject.toml's ranges. Run from the repository root, in the dev venv:
#     pip install pip-tools && bash ci/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
pip-compile -q --upgrade --extra dev --extra web --extra lint --strip-extras --no-emit-index-url \
    --no-emit-find-links -o ci/requirements-dev.lock pyproject.toml
# A constraints file names packages and versions only: drop specmon's own line (the dev extra
# names specmon[web]), which pip-compile writes as a file:// reference to this checkout.
sed -i '/^specmon @ /d' ci/requirements-dev.lock
