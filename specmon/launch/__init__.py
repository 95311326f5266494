"""Servers that specmon launches itself: the speculative/baseline split of a launch command
(`split`, pure), the child process (`process`) and the managed A/B (`ab`).

No Textual here (docs/design.md §2): `specmon ab` and the dashboard drive the same code.
"""
