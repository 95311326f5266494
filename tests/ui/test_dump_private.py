"""`d`'s dumps are private (0600 files in a 0700 folder it makes) and never written through a
link planted under their predictable names."""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from test_dashboard import push_server

from specmon.ui.app import SpecmonApp
from specmon.ui.dump import dump_screen


async def test_dumps_are_private_and_links_under_their_names_are_passed_by(
    make_app: Callable[..., SpecmonApp], tmp_path: Path
) -> None:
    folder = tmp_path / "dumps"
    app = make_app()
    app.config = replace(app.config, dumps=str(folder))
    async with app.run_test(size=(80, 24)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        wall = app.wall()
        svg, text = dump_screen(app, folder, wall)
        assert text is not None
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert {stat.S_IMODE(p.stat().st_mode) for p in (svg, text)} == {0o600}
        # Links under the next names: a dangling one (it would make its target) and one to a
        # file of the user's (it would be emptied and chmod'ed).
        stem = "specmon-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(wall))
        victim = tmp_path / "victim"
        victim.write_text("mine\n")
        (folder / f"{stem}-2.svg").symlink_to(tmp_path / "made-elsewhere")
        (folder / f"{stem}-3.txt").symlink_to(victim)
        svg4, text4 = dump_screen(app, folder, wall)
        assert (svg4.name, text4 and text4.name) == (f"{stem}-4.svg", f"{stem}-4.txt")
        assert not (tmp_path / "made-elsewhere").exists()
        assert victim.read_text() == "mine\n"
        assert not svg4.is_symlink() and text4 is not None and not text4.is_symlink()
