"""Text renderings of the analysis results, for the CLI, reports and the lab (no Textual here)."""
