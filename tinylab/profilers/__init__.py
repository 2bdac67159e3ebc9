"""Profiler adapters: one module a tool, one kernel table for all (see base.py for the interface),
the adapters by name in registry.py, and the ROCm releases' facts beside the AMD adapters.

Importing this package is cheap and imports nothing: the CLI, the launcher and `tinylab doctor`
import the registry to check availability and build wrapper argv, and the format readers import
only the ROCm facts (rocm_releases.py), never an adapter.
"""
