"""One module a screen; each is imported when first shown (see tinylab/tui/app.py)."""
