"""What `tinylab doctor` says of each AMD tool on PATH: its version, its ROCm release and how that
was learnt (where the tool's tree and the tool disagree, that too), and what its own help lists
(tinylab/profilers/rocm_help.py). The doctor calls these two functions and adds their answer to its
report; nothing here runs when no AMD tool is installed."""

from __future__ import annotations

from typing import Any

from tinylab.core.errors import UserError
from tinylab.profilers.registry import all_adapters
from tinylab.profilers.rocm import RocmToolAdapter


def amd_tools() -> dict[str, dict[str, Any]]:
    """For `tinylab doctor`: each AMD tool on PATH, its version, its ROCm release and how that was
    learnt (and where its tree and the tool disagree), and what its help says it can do."""
    report: dict[str, dict[str, Any]] = {}
    for adapter in all_adapters():
        if not isinstance(adapter, RocmToolAdapter) or adapter.executable_path() is None:
            continue
        status = adapter.available()
        release = adapter.release()
        try:
            found = adapter.capabilities()
        except UserError as exc:
            found = [f"its help could not be read: {exc}"]
        report[adapter.name] = {"executable": adapter.executable_path(), "version": status.version,
                                "release": release.label if release else None, "how": release.how if release else None,
                                "capabilities": found}
    return report


def amd_tool_lines(report: dict[str, dict[str, Any]]) -> list[str]:
    """`amd_tools()` as doctor's text lines (nothing when no AMD tool is installed)."""
    lines = ["AMD tools (what each one's --help lists)"] if report else []
    for name, tool in report.items():
        release = f"{tool['release']} ({tool['how']})" if tool["release"] else "release unknown: options from its help"
        lines.append(f"  {name:<16} {tool['version'] or '-'} · {release}")
        lines.append(f"  {'':<16} {'; '.join(tool['capabilities'])}")
    return lines
