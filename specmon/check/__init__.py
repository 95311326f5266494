"""`specmon check`: triage in seconds, one finding per line, an exit code scripts can use.

`run_check` (`run`) orders the steps; each is done by one module: `reading` (/metrics, GPUs, a
probe's description), `probing` (one probe; the probes to a verdict against the stored baseline,
or `interleaving`'s alternate probes of the baseline server), `judging` (whether the baseline
applies, the verdict line), `drafting_watch` (what the server drafts meanwhile), `traffic` (the
probes beside the traffic; per category), `advice` (the advisor's findings) and `steps` (what it
says as it goes). The store's baseline is chosen by the server's session, `session`'s
`CheckSession` (a `ServerSession`, as the dashboard's), handed the info `run_check` reads. The
report, its exit codes and its JSON: `specmon.reports.check_report`.
"""

from specmon.check.run import CHECK_RULE, DEFAULT_CHECK_TOKENS, BaselineFinder, run_check
from specmon.check.session import CheckSession
from specmon.check.steps import ProbePlan, Steps

__all__ = [
    "CHECK_RULE",
    "DEFAULT_CHECK_TOKENS",
    "BaselineFinder",
    "CheckSession",
    "ProbePlan",
    "Steps",
    "run_check",
]
