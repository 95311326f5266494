"""Running a dashboard so that a crash inside it says so: one line, a traceback file, exit 70.

Textual catches an exception raised inside the app, prints a traceback (with every frame's
locals, which may hold a secret) and returns from `run()` as if the user had quit: the shell saw
exit 0. The commands that open a dashboard run it through `run_dashboard` instead.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from specmon.storage.private_files import private_dir, write_private

if TYPE_CHECKING:  # Textual loads only for the dashboard
    from specmon.ui.app import SpecmonApp

EXIT_CRASHED = 70  # EX_SOFTWARE (sysexits.h): an internal error, a bug to report


def run_dashboard(app: SpecmonApp) -> int:
    """Run `app` until it quits: 0, or EXIT_CRASHED after one line on stderr if it crashed."""
    error = app.run_to_end()
    return 0 if error is None else report_crash(error)


def report_crash(error: BaseException) -> int:
    """Write `error`'s traceback to a file and say one line on stderr; EXIT_CRASHED."""
    what = f"{type(error).__name__}: {error}".splitlines()[0]
    text = "".join(traceback.format_exception(error))  # no locals: they may hold a secret
    try:
        where = f"its traceback is in {write_crash_log(text)}: attach that file to a bug report"
    except OSError as exc:
        where = f"its traceback could not be written: {exc}"
    print(f"specmon: error: the dashboard crashed: {what} ({where})", file=sys.stderr)
    return EXIT_CRASHED


def write_crash_log(text: str) -> Path:
    """`text` in a new file (0600, in a 0700 folder if it makes it) under the user log dir, or a
    new file of an unguessable name in the temp dir if that fails; never through a link.

    Raises:
        OSError: Neither could be written (a full disk).
    """
    name = time.strftime("crash-%Y%m%d-%H%M%S-") + f"{os.getpid()}"
    try:
        path = private_dir(platformdirs.user_log_path("specmon")) / f"{name}.log"
        write_private(path, text, new=True)
        return path
    except OSError:
        # mkstemp: O_EXCL, 0600, a random name, so a link planted in /tmp cannot take it.
        fd, temp = tempfile.mkstemp(prefix=f"specmon-{name}-", suffix=".log")
        os.close(fd)
        try:
            write_private(Path(temp), text)
        except OSError:
            Path(temp).unlink(missing_ok=True)
            raise
        return Path(temp)
