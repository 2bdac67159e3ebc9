"""Analysis of finished runs: kernel hotspot tables (hotspots), native profiler formats (formats)."""
