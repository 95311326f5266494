"""The Textual dashboard: the only package that imports Textual or Rich (docs/design.md §2).

Importing it changes nothing in Textual: `specmon.ui.tuning.install` does, at the app's start.
"""
