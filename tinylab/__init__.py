"""tinylab: a terminal lab for GPU performance work on a tiny LLaMA."""

__version__ = "0.1.0"
