"""Helpers shared by the test folders: run folders, exercise runs, profiler samples, fixture paths."""
