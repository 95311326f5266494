"""How long one scrape of a 10 MB `/metrics` takes to read into `ServerMetrics`.

A hostile or broken server can serve a `/metrics` of megabytes (a runaway label, a leaked
per-request series); the largest body read is `http.MAX_BODY_BYTES` (16 MiB). Three 10 MB
bodies, each the real SGLang 0.5.17 capture (tests/fixtures, 58 KB) plus filler:

- `other`: families specmon does not read (`sglang:junk_total{i="…"}`, `python_…`);
- `wanted`: one family it reads (`sglang:num_requests_total`) with a new label set per line,
  every line a sample it would sum;
- `comments`: `# ` lines (what the simulator's `huge` fault sends).

Each round changes one counter so that no cache answers (a busy server's text is new at each
scrape); the time is `fetch_text`'s decode plus `metrics_from_text`, wall and process CPU on
one thread, median over `--rounds`. A body refused (too many samples of the wanted series)
counts the time until the refusal.

    python benchmarks/metrics_10mb.py --rounds 5
    PYTHONPATH=/tmp/before python -P benchmarks/metrics_10mb.py --rounds 5  # another checkout

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from specmon.errors import SourceError
from specmon.sources import metrics as metrics_module
from specmon.sources.metrics import metrics_from_text

REAL = Path(__file__).parent.parent / "tests/fixtures/sglang-0.5.17/spec/metrics"
SIZE = 10 * 2**20


FILLERS = {
    "other": 'sglang:junk_total{{model_name="m",i="{i}"}} {i}.0',
    "wanted": 'sglang:num_requests_total{{model_name="m",i="{i}"}} 1.0',
    "comments": "# " + "x" * 1021,
}
"""Each body's filler line (`i` its number); `keys_pty.py --conditions metrics10mb` serves the
"other" one after every scrape of the simulator."""


def fill(line: str) -> str:
    """`line` numbered from 0 until the text reaches `SIZE`."""
    lines, size, i = [], 0, 0
    while size < SIZE:
        text = line.format(i=i) + "\n"
        lines.append(text)
        size += len(text)
        i += 1
    return "".join(lines)


def bodies() -> dict[str, str]:
    """The three 10 MB bodies, by name."""
    real = REAL.read_text()
    return {name: real + fill(line) for name, line in FILLERS.items()}


def one(body: bytes) -> tuple[float, float, str]:
    """Wall and CPU seconds to read `body` as a scrape is read, and what came of it."""
    cache_clear = metrics_module._metrics.cache_clear
    cache_clear()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        metrics = metrics_from_text(body.decode("utf-8"))
        outcome = f"{len(metrics.families)} families"
    except SourceError as exc:
        outcome = f"refused: {str(exc)[:60]}"
    return time.perf_counter() - wall, time.process_time() - cpu, outcome


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| body | size | wall, median (range) | CPU, median | outcome |")
    print("|---|---|---|---|---|")
    for name, text in bodies().items():
        walls, cpus, outcome = [], [], ""
        for r in range(args.rounds):
            body = text.replace(
                "sglang:generation_tokens_total{", f'sglang:generation_tokens_total{{r="{r}",', 1
            )
            wall, cpu, outcome = one(body.encode())
            walls.append(wall)
            cpus.append(cpu)
        print(
            f"| {name} | {len(text) / 2**20:.1f} MiB | {statistics.median(walls) * 1000:.0f} ms "
            f"({min(walls) * 1000:.0f}–{max(walls) * 1000:.0f}) | "
            f"{statistics.median(cpus) * 1000:.0f} ms | {outcome} |"
        )


if __name__ == "__main__":
    main()
