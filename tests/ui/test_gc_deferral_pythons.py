"""The deferred full collections (specmon/ui/tuning/gc_deferral.py) on each CPython specmon
supports, where this machine has it (pyenv's, or on PATH): CPython runs none itself while they
are deferred, and the one due runs when asked. The tuning imports nothing but the standard
library, so it runs there without specmon's dependencies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SCRIPT = f"""
import gc, json, sys
sys.path.insert(0, {str(ROOT)!r})
from specmon.ui import tuning
from specmon.ui.tuning import gc_deferral
tuning.install({{}})
full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                    and full.append(1))
gc_deferral.defer_full_collections()
class Node:
    pass
for _ in range(300_000):  # cyclic garbage: the younger generations are collected many times
    a, b = Node(), Node()
    a.b, b.a = b, a
deferred, due = len(full), gc_deferral.full_collection_due()
gc_deferral.collect_if_due()
gc_deferral.resume_full_collections()
print(json.dumps({{"active": tuning.active("gc_deferral"), "deferred": deferred, "due": due,
                  "ran": len(full) - deferred, "restored": gc.get_threshold()[2]}}))
"""


def _python(version: str) -> str | None:
    if sys.version_info[:2] == tuple(map(int, version.split("."))):
        return sys.executable
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python"))
    return str(found[-1]) if found else shutil.which(f"python{version}")


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_full_collections_wait_for_the_dashboard(version: str) -> None:
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} here")
    done = subprocess.run(
        [python, "-I", "-c", SCRIPT], capture_output=True, text=True, timeout=100, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["active"] is True
    assert result["deferred"] == 0 and result["due"] is True and result["ran"] == 1
    assert 0 < result["restored"] < 1 << 30  # CPython's own threshold again
