"""The Textual dashboard: the only package that imports Textual or Rich (DESIGN.md §2)."""
