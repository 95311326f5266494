"""specmon against a real speculative server and its plain twin: bench, check, the dashboard.

Checks what specmon reports against the servers' own counters and writes everything to an
output folder. Used on the H200 machine for SGLang (see docs/compatibility.md):

    python benchmarks/real_server_session.py --spec http://127.0.0.1:30000 \
        --plain http://127.0.0.1:30001 --out "$OUT"

Exit status 0 when every check agreed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.sources.metrics import metrics_from_text
from specmon.storage.store import Store
from specmon.target import Target

TOKENS = 128


def specmon(*args: str) -> tuple[int, str, str]:
    """Run the specmon CLI as a user would."""
    done = subprocess.run(
        [sys.executable, "-m", "specmon", *args], capture_output=True, text=True, timeout=300
    )
    return done.returncode, done.stdout, done.stderr


def counters(url: str) -> tuple[float | None, float | None]:
    """(generation_tokens_total, spec_verify_calls_total) from the server's /metrics."""
    m = metrics_from_text(httpx.get(f"{url}/metrics", timeout=10).text)
    return m.generation_tokens_total, m.spec_verify_calls_total


def agree(name: str, ours: float, theirs: float, tolerance: float, results: dict[str, Any]) -> None:
    """Record one comparison."""
    ok = abs(ours - theirs) <= tolerance * abs(theirs)
    results["checks"].append({"name": name, "specmon": ours, "server": theirs, "ok": ok})
    print(f"{'OK ' if ok else 'BAD'} {name}: specmon {ours:.4f} vs server {theirs:.4f}")


def bench_against_counters(url: str, db: Path, results: dict[str, Any]) -> dict[str, Any]:
    """Bench with no warm-up so the counters' window is exactly the bench's runs."""
    gen0, ver0 = counters(url)
    code, out, err = specmon(
        "bench",
        url,
        "--runs",
        "5",
        "--warmup",
        "0",
        "--max-tokens",
        str(TOKENS),
        "--json",
        "--db",
        str(db),
    )
    gen1, ver1 = counters(url)
    print(err)
    assert code == 0, err
    body: dict[str, Any] = json.loads(out)
    runs = body["runs"]
    tokens = sum(r["completion_tokens"] for r in runs)
    agree(
        f"{url} tokens vs Δgeneration_tokens_total", tokens, (gen1 or 0) - (gen0 or 0), 0.0, results
    )
    if body["target"]["speculative"] is not None and ver0 is not None and ver1 is not None:
        verifies = sum(r["verify_ct"] for r in runs)
        agree(
            f"{url} Σtokens/Σverify vs Δgeneration/Δverify (accept length incl. first token)",
            tokens / verifies,
            (gen1 - gen0) / (ver1 - ver0),
            0.02,
            results,
        )  # type: ignore[operator]
        # The decode accept length leaves out each run's first (prefill) token: pooled over the
        # runs it must equal the counters' (Δgeneration − runs) / Δverify.
        pooled = sum(r["accept_length"] * r["verify_ct"] for r in runs) / verifies
        agree(
            f"{url} pooled decode accept length vs (Δgeneration − runs)/Δverify",
            pooled,
            (gen1 - gen0 - len(runs)) / (ver1 - ver0),
            0.02,
            results,
        )  # type: ignore[operator]
    return body


async def dashboard(spec: str, plain: str, db: Path, out: Path, results: dict[str, Any]) -> None:
    """The dashboard, headless: press b, wait for the baseline and a few probes, screenshot."""
    from specmon.ui.app import SpecmonApp

    config = MonitorConfig(
        url=spec, baseline_url=plain, probe_every=2, probe_tokens=TOKENS, baseline_runs=3
    )
    with Store(db) as store:
        app = SpecmonApp(dashboard_session(config, Targets(Target(spec), Target(plain)), store))
        async with app.run_test(size=(160, 50)) as pilot:
            deadline = time.monotonic() + 120
            while app.session.live.server.info is None and time.monotonic() < deadline:
                await pilot.pause(0.2)
            await pilot.press("b")
            while (app.session.live.baseline is None or len(app.session.live.probes) < 3) and (
                time.monotonic() < deadline
            ):
                await pilot.pause(0.5)
            await pilot.pause(2)
            app.save_screenshot(str(out / "dashboard-160x50.svg"))
            view = app._last_view
            results["dashboard"] = asdict(view) if view else None
            ok = view is not None and view.baseline.present and view.decode.decode_tok_s is not None
            results["checks"].append({"name": "dashboard baseline + probes", "ok": bool(ok)})
            print(f"{'OK ' if ok else 'BAD'} dashboard: baseline and probes shown")


def main() -> int:
    """Run every check; write results.json."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--plain", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "specmon.db"
    results: dict[str, Any] = {"checks": [], "check": {}}
    for url in (args.spec, args.plain):
        code, out, err = specmon("check", url, "--db", str(db), "--probe-tokens", str(TOKENS))
        results["check"][url] = {"exit": code, "lines": out.splitlines(), "stderr": err}
        print(f"check {url} -> {code}\n{out}{err}")
    results["bench_plain"] = bench_against_counters(args.plain, db, results)
    results["bench_spec"] = bench_against_counters(args.spec, db, results)
    code, out, err = specmon("check", args.spec, "--db", str(db), "--json")
    results["check_with_baseline"] = json.loads(out) if out.strip() else {"stderr": err}
    print(f"check with baseline -> {code}\n{out}")
    asyncio.run(dashboard(args.spec, args.plain, db, args.out, results))
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    return 0 if all(c["ok"] for c in results["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
