"""Time from `tinylab` starting to its first screen being painted, as a terminal sees it.

Runs the real command in a pseudo-terminal of 80x24 (no tmux needed) and stops the clock when
the Lab's first frame (its "Versions" panel and the footer's Launch key) has been written.
Each run uses a fresh empty run store. Prints the median and worst wall time of N runs, and the
CPU time the process had used by then: on a busy machine the wall time includes waiting for a
core, while the CPU time is what an idle machine's wall time would be (start-up is one thread).

    python tests/tui/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time

MARKERS = (b"Versions", b"Launch")


def cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_paint_s(timeout: float = 30.0) -> tuple[float, float]:
    runs = tempfile.mkdtemp(prefix="tinylab-bench-")
    exe = shutil.which("tinylab") or sys.executable
    argv = [exe, "lab", "--runs-dir", runs] if exe != sys.executable else [exe, "-m", "tinylab", "lab",
                                                                            "--runs-dir", runs]
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = b""
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
            if all(m in seen for m in MARKERS):
                return time.perf_counter() - start, cpu_s(pid)
        raise RuntimeError(f"no first paint within {timeout}s; last output: {seen[-300:]!r}")
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
        shutil.rmtree(runs, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = [first_paint_s() for _ in range(args.runs)]
    walls, cpus = [w for w, _ in results], [c for _, c in results]
    load = os.getloadavg()[0]
    print(f"tinylab first paint at 80x24 on {os.cpu_count()} CPUs (load average {load:.1f}): "
          f"wall median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s; "
          f"CPU time median {statistics.median(cpus):.2f} s, worst {max(cpus):.2f} s; {len(results)} runs")


if __name__ == "__main__":
    main()
