"""Analysis: pure functions from observations to figures. No I/O, no clocks, no Textual."""
