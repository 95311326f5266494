"""TLS: a self-signed certificate fails verification with a clear message; `--insecure` works and
is announced, on every surface."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fault_cases import FAST, TIMEOUT_S, self_signed

from specmon.cli import main
from specmon.sim import SimThread
from specmon.storage.store import Store

# asyncio leaks the server's socket of a handshake the client refused (in the simulator's loop).
pytestmark = pytest.mark.filterwarnings("ignore:unclosed transport:ResourceWarning")
TLS_FAILED = "TLS failed ([SSL: CERTIFICATE_VERIFY_FAILED]"
ANNOUNCED = "specmon: warning: TLS verification is off (--insecure)"


@pytest.fixture(scope="module")
def tls_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimThread]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    with SimThread(replace(FAST, ssl_certfile=cert, ssl_keyfile=key)) as sim:
        yield sim
    gc.collect()  # the leaked socket's warning, here rather than in another module's test


def test_the_simulator_speaks_https(tls_sim: SimThread) -> None:
    assert tls_sim.url.startswith("https://127.0.0.1:")


def test_check_refuses_an_unverified_certificate_and_says_how_to_skip(
    tls_sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", tls_sim.url, "--db", empty_db])
    lines = capsys.readouterr().out.splitlines()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"✗ {tls_sim.url}/server_info: {TLS_FAILED}")
    assert lines[0].endswith("; --insecure skips verification")


@pytest.mark.slow
def test_check_insecure_works_and_is_announced(
    tls_sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", tls_sim.url, "--insecure", "--probe-tokens", "12", "--db", empty_db])
    out = capsys.readouterr()
    assert code == 0, out.out
    assert ANNOUNCED in out.err.splitlines()


@pytest.mark.slow
def test_bench_over_tls(
    tls_sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    args = ["bench", tls_sim.url, "--runs", "1", "--warmup", "0", "--max-tokens", "12",
            "--db", str(db), "--read-timeout", str(TIMEOUT_S)]  # fmt: skip
    assert main(args) == 1
    assert TLS_FAILED in capsys.readouterr().err
    assert main([*args, "--insecure"]) == 0
    assert ANNOUNCED in capsys.readouterr().err.splitlines()
    with Store(db) as store:
        assert len(store.list()) == 1
