"""Sources: each fetches one thing and returns a frozen dataclass or raises a typed error.

Nothing here imports Textual; every source takes its `httpx.AsyncClient` as an argument.
"""
