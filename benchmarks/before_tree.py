"""Another commit's specmon beside this tree's: the benchmarks' `--before REF`.

`git archive REF` into a folder; a benchmark runs that folder's `specmon` package through
PYTHONPATH (with `python -P`: `-m` would put the current directory, this checkout, first)
alternating with this tree's, against the same servers, so that one run on a shared machine
holds both and their ratio.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def archived(ref: str, into: Path) -> str:
    """Extract `ref`'s tree into the folder `into` (made here), its bytecode compiled as this
    tree's is (else the first run of it would compile every module in its measured window); its
    path, for PYTHONPATH."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "specmon")], check=True)
    return str(into)


def commit(ref: str = "HEAD") -> str:
    """`ref`'s short commit id (what a results file names)."""
    out = subprocess.run(["git", "rev-parse", "--short", ref], capture_output=True, check=True)
    return out.stdout.decode().strip()


def load() -> tuple[float, float, float]:
    """The load averages (1, 5, 15 minutes), printed beside a shared machine's figures."""
    return os.getloadavg()
