"""Guided exercise scenarios: `<id>.toml` files with their markdown beside them (data, never code).

Loaded and validated by tinylab.exercises; the format is documented in README.md here.
"""
