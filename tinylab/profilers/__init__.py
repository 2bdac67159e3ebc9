"""Profiler adapters: one module a tool, one kernel table for all (see base.py for the interface
and what an adapter declares), the adapters by name in registry.py, and the ROCm tools' shared
release and help handling beside the AMD adapters. docs/profilers.md: adding a profiler.

Importing this package is cheap and imports nothing. The adapter modules import nothing heavy at
module level either: tinylab.config imports the registry, and with it every adapter, for their
declarations, and every command imports tinylab.config.
"""
