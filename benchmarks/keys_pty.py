"""Keys and first frame as a person sees them: the real `specmon` in a real pty, read by pyte.

Each configuration (terminal size × server condition) runs the installed `specmon` (or
`python -m specmon`) in a pseudo-terminal of that size against two simulated servers in a child
process: a speculative one (`--url`) and its plain twin (`--baseline-url`), either healthy, or
with every route of both hung (`Faults.hang = {"*"}`: connections accepted, nothing answered),
or (`--conditions metrics10mb`) with each `/metrics` padded to 10 MB of families specmon does
not read (metrics_10mb.py's "other" body), which the dashboard scrapes every second.
What the program writes is fed to pyte, a VT100 emulator, so the benchmark knows what the screen
shows. A key's time runs from the write of the key to the first read of output after which the
emulated screen shows the key's result (the help's key table, the probe's new state, the theme's
notification …): it includes Textual's input thread, the handler, the render and the write.

    python benchmarks/keys_pty.py --presses 20 --launches 20 \
        --out benchmarks/results/keys-YYYY-MM-DD.json
    # the code before a change, the same way (its specmon is imported from PYTHONPATH):
    mkdir /tmp/before && git archive COMMIT specmon | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before python benchmarks/keys_pty.py --presses 20 --launches 20

One launch per configuration presses every key `--presses` times (screens opened and closed
again, a baseline started and cancelled, the probe paused and resumed); `--launches` launches
measure the first frame (process start to the first frame showing the dashboard's panels) and
`q` (written to the process's exit). `specmon demo` is launched the same way for its first
frame. Prints a Markdown table per size; the JSON holds every sample.

Times are of one run on a shared machine: compare figures from the same run, not across runs.
The benchmark process itself only reads the pty and parses (a few ms per full repaint), and its
servers run in a child process so that they take no time from it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import multiprocessing
import os
import pty
import queue
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pyte
from metrics_10mb import FILLERS, fill

from specmon.sim import SimConfig, SimThread

Predicate = Callable[[str], bool]
"""Whether the screen (its lines joined by newlines) shows an expected result."""

ESC = b"\x1b"
PAGE_DOWN = b"\x1b[6~"
LEAVE_ALT_SCREEN = b"\x1b[?1049l"  # what Textual writes on exit: the shell's screen is back
TIMEOUT_S = 5.0
BEHIND_S = 2.0
"""Before a key, a pyte this far behind the reads is brought level by a repaint (`Term.resync`)."""
PANELS = ("Decode", "Speculation", "Baseline", "Server", "Events")
HELP = "take a fresh baseline"
WHY = "Why values show"
COMPARE = "Snapshots of"
PROMPT = "Snapshot this configuration"
PLACEHOLDER = "e.g. eagle3"
TAKING = "taking a baseline"
PAUSED = "probe paused (p)"  # the decode panel; the events log says "probe paused"


# The servers: a child process, so that their work does not take this process's time.


def serve(conn: Connection, condition: str) -> None:
    """Run a speculative simulator and its plain twin until `conn` says stop (child process):
    healthy, every path hung ("hung"), or each `/metrics` padded to 10 MB with families specmon
    does not read ("metrics10mb": `metrics_10mb.py`'s "other" body, a new text each scrape)."""
    spec = SimConfig(enable_metrics=True)
    plain = replace(spec, speculative_algorithm=None)
    filler = fill(FILLERS["other"]) if condition == "metrics10mb" else ""
    with SimThread(spec) as s, SimThread(plain) as p:
        for sim in (s, p):

            async def fault(sim: SimThread = sim) -> None:
                if condition == "hung":
                    sim.server.faults.hang.add("*")
                elif filler:
                    sim.server.faults.metrics_rewrite = lambda text: text + filler

            sim.call(fault)
        conn.send((s.url, p.url))
        conn.recv()


@contextlib.contextmanager
def servers(condition: str) -> Iterator[tuple[str, str]]:
    """The two servers' URLs while they run (`condition`: `serve`'s)."""
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("spawn").Process(target=serve, args=(theirs, condition))
    child.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        child.join(10)
        if child.is_alive():
            child.kill()


# The terminal: a pty, and pyte reading everything the program writes to it.


class Timeout(Exception):
    """The screen did not show what was expected in time."""


class Term:
    """One program in a pseudo-terminal of a fixed size, its output parsed as it arrives.

    A thread reads the pty as fast as the program writes and stamps each read with its time;
    pyte parses behind it. pyte parses ~200 KB/s, and a full repaint at 160x50 is about that
    big: reading and parsing in one loop would time pyte, not specmon. A program that writes
    faster than pyte parses for long (a dashboard at many samples a second, for hours) would
    leave pyte ever further behind: before a screen is opened (`level`), a pyte more than
    `BEHIND_S` behind drops what it has not parsed and has the program repaint (`resync`).
    """

    def __init__(self, argv: list[str], size: tuple[int, int], env: dict[str, str], cwd: str):
        cols, rows = size
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.eof = False
        self.output_bytes = 0
        self.resyncs = 0
        self.dropped_bytes = 0
        self._last_read_at = self._parsed_read_at = time.monotonic()
        self._reads: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
        self.started = time.monotonic()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the size is set on the pty before the program reads it
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:  # EIO: the program has gone
                data = b""
            self._last_read_at = time.monotonic()
            self._reads.put((self._last_read_at, data))
            if not data:
                return

    def text(self) -> str:
        """What the screen shows now."""
        return "\n".join(self.screen.display)

    def _read(self, deadline: float) -> tuple[float, bytes] | None:
        """Parse the next read, waiting until `deadline`: when it was read, and what; or None."""
        try:
            read_at, data = self._reads.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        self.eof = not data
        self.output_bytes += len(data)
        self.stream.feed(data)
        self._parsed_read_at = read_at
        return read_at, data

    def catch_up(self) -> None:
        """Parse every read made before now (pyte may lag behind the reader; a program writing
        faster than pyte parses would keep "every read" from ever ending)."""
        until = self._last_read_at
        while self._parsed_read_at < until and not self.eof and self._read(0) is not None:
            pass

    def _drop_reads(self) -> None:
        while not self.eof:
            try:
                read_at, data = self._reads.get_nowait()
            except queue.Empty:
                return
            self.eof = not data
            self.output_bytes += len(data)
            self.dropped_bytes += len(data)
            self._parsed_read_at = read_at

    def _set_size(self, cols: int, rows: int) -> None:
        """Resize the pty: the kernel sends the program SIGWINCH."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def level(self, ready: Predicate) -> None:
        """Bring the screen up to date before a key: parse what was read, or, with pyte more than
        `BEHIND_S` behind, `resync` and parse until the screen is `ready` again."""
        if self._last_read_at - self._parsed_read_at > BEHIND_S:
            self.resync()
            self.wait_for(ready, time.monotonic(), "the repaint after a resync")
        self.catch_up()

    def resync(self) -> None:
        """Drop every read pyte has not parsed, and have the program repaint its whole screen
        from scratch: the pty one row shorter for a moment (its output dropped too), then its
        size again. The repaint at the new size is parsed as it comes, on a blank screen."""
        self.resyncs += 1
        cols, rows = self.screen.columns, self.screen.lines
        self._set_size(cols, rows - 1)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and not self.eof:
            self._drop_reads()
            time.sleep(0.05)
        self._drop_reads()
        self.screen.reset()
        self._set_size(cols, rows)

    def wait_for(self, expected: Predicate, since: float, what: str) -> float:
        """Seconds from `since` to the read after which the screen shows `expected`."""
        deadline = since + TIMEOUT_S
        # The deadline is on the reads' stamps: a pyte behind the reader (a loaded machine)
        # still parses every read made in time before the key counts as unanswered.
        while not self.eof:
            read = self._read(deadline)
            if read is None:
                break
            if expected(self.text()):
                return read[0] - since
            if read[0] > deadline:
                break
        behind = self._last_read_at - self._parsed_read_at
        raise Timeout(
            f"{what}: not shown within {TIMEOUT_S} s (pyte {behind:.1f} s behind the reads); "
            f"the screen:\n{self.text()}"
        )

    def press(self, key: bytes, expected: Predicate, what: str) -> float:
        """Write `key`; seconds until the screen shows `expected`."""
        self.catch_up()
        if expected(self.text()):
            raise Timeout(f"{what}: shown before the key was pressed:\n{self.text()}")
        written = time.monotonic()
        os.write(self.fd, key)
        return self.wait_for(expected, written, what)

    def idle(self, seconds: float) -> None:
        """Keep reading (the program must never block on a full pty) for `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.eof:
            self._read(deadline)
        self.catch_up()

    def quit(self) -> tuple[float, float]:
        """Press q: seconds to the screen restored (alternate screen left), and to the exit."""
        written = time.monotonic()
        os.write(self.fd, b"q")
        restored = None
        deadline = written + TIMEOUT_S
        while not self.eof and time.monotonic() < deadline:
            read = self._read(deadline)
            if restored is None and read is not None and LEAVE_ALT_SCREEN in read[1]:
                restored = read[0] - written
        _, status = os.waitpid(self.pid, 0)
        exited = time.monotonic() - written
        os.close(self.fd)
        if status != 0:
            raise Timeout(f"specmon exited with status {status}")
        return (restored if restored is not None else exited), exited

    def kill(self) -> None:
        """End the program (after a failure)."""
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


# What each key should show.


def shows(*texts: str) -> Predicate:
    """Every one of `texts` is on the screen."""
    return lambda screen: all(t in screen for t in texts)


def dashboard_without(text: str) -> Predicate:
    """The dashboard's panels are back and `text` has gone."""
    return lambda screen: text not in screen and all(p in screen for p in PANELS)


def theme_after(before: str) -> Predicate:
    """A `theme: NAME` notification for a theme not named on the screen `before`."""

    def names(screen: str) -> set[str]:
        return {
            line.split("theme: ", 1)[1].split()[0]
            for line in screen.splitlines()
            if "theme: " in line and line.split("theme: ", 1)[1].split()
        }

    seen = names(before)
    return lambda screen: bool(names(screen) - seen)


def scrolled_from(before: str) -> Predicate:
    """The help's first lines changed (PageDown scrolled it)."""
    top = before.splitlines()[:6]
    return lambda screen: screen.splitlines()[:6] != top


@dataclass(frozen=True)
class Step:
    """One key press of a round and what it should show; `fresh` builds it from the screen.

    `group` is the dashboard key that starts the steps that must run together (a screen opened,
    used and closed).
    """

    group: str
    label: str
    key: bytes
    expected: Predicate | None = None
    fresh: Callable[[str], Predicate] | None = None


ROUND: tuple[Step, ...] = (
    Step("?", "? (open help)", b"?", shows(HELP)),
    Step("?", "PageDown (in help)", PAGE_DOWN, fresh=scrolled_from),
    Step("?", "Esc (close help)", ESC, dashboard_without(HELP)),
    Step("i", "i (open why —)", b"i", shows(WHY)),
    Step("i", "i (close why —)", b"i", dashboard_without(WHY)),
    Step("c", "c (open compare)", b"c", shows(COMPARE)),
    Step("c", "e (export, in compare)", b"e", shows("exported 0 rows")),
    Step("c", "c (close compare)", b"c", dashboard_without(COMPARE)),
    Step("s", "s (open snapshot label)", b"s", shows(PROMPT, PLACEHOLDER)),
    Step("s", "x (typed, in label)", b"x", fresh=lambda _: lambda now: PLACEHOLDER not in now),
    Step("s", "Esc (close label)", ESC, dashboard_without(PROMPT)),
    Step("b", "b (start baseline)", b"b", shows(TAKING)),
    Step("b", "Esc (cancel baseline)", ESC, dashboard_without(TAKING)),
    Step("p", "p (pause probe)", b"p", shows(PAUSED)),
    Step("p", "p (resume probe)", b"p", dashboard_without(PAUSED)),
    Step("t", "t (next theme)", b"t", fresh=theme_after),
)


# Configurations and their runs.


@dataclass(frozen=True)
class Config:
    """One terminal size and one server condition ("healthy", "hung", "metrics10mb" or
    "demo")."""

    size: tuple[int, int]
    condition: str
    record: bool = False
    """With `--record FILE` (not the demo)."""

    @property
    def name(self) -> str:
        """How the results name it."""
        return f"{self.size[0]}x{self.size[1]} {self.condition}" + (" recording" * self.record)


ONCE_A_LAUNCH = ("q (screen restored)", "q (process exited)", "first frame (start → panels)")


@dataclass
class Results:
    """Every sample of one configuration, in seconds."""

    keys: dict[str, list[float]] = field(default_factory=dict)
    first_frame: list[float] = field(default_factory=list)
    quit_restored: list[float] = field(default_factory=list)
    quit_exited: list[float] = field(default_factory=list)

    def add(self, label: str, seconds: float) -> None:
        """Record one key's time."""
        self.keys.setdefault(label, []).append(seconds)

    def samples(self) -> dict[str, list[float]]:
        """Every series by its label in the tables."""
        once = (self.quit_restored, self.quit_exited, self.first_frame)
        return {**self.keys, **dict(zip(ONCE_A_LAUNCH, once, strict=True))}


def specmon_argv() -> list[str]:
    """The installed console script beside this interpreter, else `python -m specmon`."""
    script = Path(sys.executable).with_name("specmon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "specmon"]


def launch(argv: list[str], config: Config, home: str, results: Results) -> Term:
    """Start the program; wait for its first frame showing every panel."""
    # Bytecode is cached as for a user (a dev shell may say not to: then every start compiles).
    skip = ("TMUX", "TEXTUAL", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env |= {"TERM": "xterm-256color", "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home}
    term = Term(argv, config.size, env, home)
    try:
        results.first_frame.append(term.wait_for(shows(*PANELS), term.started, "first frame"))
    except Timeout:
        term.kill()
        raise
    return term


def run_config(
    config: Config, presses: int, launches: int, rng: random.Random, steps: tuple[Step, ...]
) -> Results:
    """Launch and press keys in one configuration."""
    results = Results()
    with tempfile.TemporaryDirectory(prefix="keys-pty-") as home:
        db = ["--db", str(Path(home) / "specmon.db")]
        with contextlib.ExitStack() as stack:
            if config.condition == "demo":
                argv = [*specmon_argv(), "demo"]
            else:
                url, base = stack.enter_context(servers(config.condition))
                argv = [*specmon_argv(), "--url", url, "--baseline-url", base, *db]
                if config.record:
                    argv += ["--record", str(Path(home) / "session.jsonl")]
            launch(argv, config, home, Results()).quit()  # writes the bytecode cache: not timed
            for launch_no in range(launches):
                term = launch(argv, config, home, results)
                try:
                    if launch_no == 0 and config.condition != "demo":
                        term.idle(2.0)  # past start-up: the first samples, or the first hangs
                        press_rounds(term, presses, rng, results, steps)
                    else:
                        term.idle(rng.uniform(0.3, 0.8))
                    restored, exited = term.quit()
                except BaseException:
                    term.kill()
                    raise
                results.quit_restored.append(restored)
                results.quit_exited.append(exited)
                print(
                    f"{config.name}: launch {launch_no + 1}/{launches} first frame "
                    f"{results.first_frame[-1] * 1000:.0f} ms, q {exited * 1000:.0f} ms",
                    file=sys.stderr,
                    flush=True,
                )
    return results


def press_rounds(
    term: Term, presses: int, rng: random.Random, results: Results, steps: tuple[Step, ...]
) -> None:
    """Every step, `presses` times; random pauses so that keys land at any phase of a tick."""
    for _ in range(presses):
        group = None
        for step in steps:
            if step.group != group:  # on the dashboard: a screen is about to open
                term.level(shows(*PANELS))
                group = step.group
            else:  # a step built from the screen (`fresh`) must see it as it is now
                term.catch_up()
            expected = step.expected or step.fresh(term.text())  # type: ignore[misc]
            results.add(step.label, term.press(step.key, expected, step.label))
            term.idle(rng.uniform(0.15, 0.45))


# Reporting.


def summary(samples: list[float]) -> dict[str, float]:
    """Median and max in milliseconds."""
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "max_ms": round(max(samples) * 1000, 1),
        "n": len(samples),
    }


def table(all_results: dict[Config, Results], size: tuple[int, int]) -> str:
    """A Markdown table of one size: median / max ms per key and condition."""
    configs = [c for c in all_results if c.size == size]
    head = " | ".join(f"{c.name.split(' ', 1)[1]}: median / max ms" for c in configs)
    lines = [f"| key (what the screen must show) | {head} |", "|---|" + "---|" * len(configs)]
    measured = {label for c in configs for label in all_results[c].samples()}
    for label in [s.label for s in ROUND if s.label in measured] + list(ONCE_A_LAUNCH):
        cells = []
        for c in configs:
            samples = all_results[c].samples().get(label)
            s = summary(samples) if samples else None
            cells.append(f"{s['median_ms']:.0f} / {s['max_ms']:.0f}" if s else "—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def commit() -> str:
    """The checkout's commit, marked when the tree has changes."""
    here = Path(__file__).resolve().parent
    head = subprocess.run(
        ["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(here), "status", "--porcelain", "--", "specmon"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return head + ("+changes" if dirty else "")


def main() -> int:
    """Run every configuration; print the tables; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="80x24,160x50")
    parser.add_argument("--conditions", default="healthy,hung,demo")
    parser.add_argument("--presses", type=int, default=20, help="rounds of every key")
    parser.add_argument("--launches", type=int, default=20, help="launches (first frame, q)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--keys", help="only the steps these keys start (e.g. 'i,?')")
    parser.add_argument("--out", type=Path, help="write every sample here (JSON)")
    parser.add_argument(
        "--record",
        action="store_true",
        help="also each condition but the demo with --record FILE on",
    )
    args = parser.parse_args()
    if shutil.which("git") is None:
        print("git is needed (the results name the commit)", file=sys.stderr)
        return 2
    # The reader thread stamps each read when it gets the GIL back from pyte: within 1 ms, not 5.
    sys.setswitchinterval(0.001)
    rng = random.Random(args.seed)
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.sizes.split(",")]
    configs = [Config((w, h), c) for w, h in sizes for c in args.conditions.split(",")]
    if args.record:  # each server condition again, recording: alternating would be fairer still
        configs += [replace(c, record=True) for c in configs if c.condition != "demo"]
    keys = args.keys.split(",") if args.keys else None
    steps = tuple(s for s in ROUND if keys is None or s.group in keys)
    all_results = {c: run_config(c, args.presses, args.launches, rng, steps) for c in configs}
    for w, h in sizes:
        print(f"\n{w}x{h}\n\n" + table(all_results, (w, h)))
    if args.out:
        doc: dict[str, Any] = {
            "command": " ".join(["python", *sys.argv]),
            "commit": commit(),
            # Set to time another checkout's specmon (e.g. /tmp/before from `git archive`).
            "PYTHONPATH": os.environ.get("PYTHONPATH"),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "argv": specmon_argv(),
            "configs": {
                c.name: {
                    "summary": {label: summary(s) for label, s in r.samples().items()},
                    "samples_s": r.samples(),
                }
                for c, r in all_results.items()
            },
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
