"""What every test starts from."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from specmon.sources import conditions
from specmon.storage.store import Store

# A test run started under `nohup`, or by a shell as `cmd &`, inherits SIGHUP or SIGINT ignored,
# and so would every process the tests start (an ignored signal stays ignored across exec): the
# tests that signal a specmon process expect a terminal's foreground defaults, and set what they
# ignore themselves. A handled signal is reset to its default in a child at exec.
_DEFAULTS = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGHUP: signal.SIG_DFL,
    signal.SIGTERM: signal.SIG_DFL,
}
for _signum, _handler in _DEFAULTS.items():
    if signal.getsignal(_signum) == signal.SIG_IGN:
        signal.signal(_signum, _handler)


# Directories whose every test is slow (the `slow` marker; the fast tier, `pytest -m "not slow"`,
# leaves them out): the dashboard's Pilot and snapshot tests, the browser's, the real servers' and
# the soak. Elsewhere a slow test or module is marked where it is written.
SLOW_DIRS = frozenset({"ui", "web", "realserver", "soak"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_dirs = [Path(__file__).parent / name for name in SLOW_DIRS]
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in slow_dirs):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def _own_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run's own data and state folders: a command given no --db (or dumps, crash files)
    never reads or writes the user's, whose store may be of a newer specmon. Not the cache and
    config folders: the real servers the tests launch keep theirs there (a fresh vLLM cache
    made every launched vLLM's streams arrive bunched in CI)."""
    home = tmp_path_factory.mktemp("user-dirs")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("XDG_DATA_HOME", "XDG_STATE_HOME"):
            patch.setenv(name, str(home / name.lower()))
        yield


@pytest.fixture(autouse=True)
def _no_client_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probes neither time their client's event loop (`sources.conditions.TICK_S`) nor read how
    busy its machine is (`HOST_CPU`): on a shared, busy machine either would flag a starved or
    busy client in any test that expects a clean ✓. The server's load is still read. The tests
    of the lag timer and the CPU share give their watch their own
    (tests/sources/test_probe_conditions.py)."""
    monkeypatch.setattr(conditions, "TICK_S", None)
    monkeypatch.setattr(conditions, "HOST_CPU", False)


@pytest.fixture
def empty_db(tmp_path: Path) -> str:
    """An empty snapshot store: `check` and `whatif` refuse a --db that names none."""
    path = tmp_path / "empty.db"
    Store(path).close()
    return str(path)
