"""Key latency on the Run screen while the run floods its log with 10,000 lines a second.

A child process appends coloured lines to a fake running run's output.log at the given rate
(in 10 ms bursts); the lab (headless, 80x24, with the real feed worker, Log widget and charts)
watches that run while this script presses `t` (switch panel) every 200 ms and times each press
until its action has run. Also reports the event loop's worst stall, measured by a 20 ms timer,
and how many log lines reached the Log widget.

    python tests/tui/bench_log_flood.py [--rate 10000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRITER = r"""
import sys, time
path, rate = sys.argv[1], int(sys.argv[2])
burst = max(1, rate // 100)
n = 0
with open(path, "a", buffering=1 << 20) as out:
    next_t = time.perf_counter()
    while True:
        out.write("".join(f"step {n + i:9d} | loss \x1b[32m{6.9 - (n + i) * 1e-7:.6f}\x1b[0m | "
                          f"12.34 ms | 162.1 samples/s | some padding text to make it ~100 bytes\n"
                          for i in range(burst)))
        out.flush()
        n += burst
        next_t += 0.01
        time.sleep(max(0.0, next_t - time.perf_counter()))
"""


def fake_running_run(root: Path, pid: int) -> str:
    import psutil

    from tinylab.config import RunConfig

    run_id = "20261126-030000-f100"
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    cfg = RunConfig(device="cpu", num_steps=1_000_000).resolved()
    (run_dir / "config.json").write_text(cfg.to_json(), encoding="utf-8")
    (run_dir / "process.json").write_text(json.dumps(
        {"pid": pid, "pgid": pid, "start_time": psutil.Process(pid).create_time(), "launched_at": time.time()}))
    (run_dir / "events.jsonl").write_text(json.dumps(
        {"event": "start", "time": time.time(), "config": cfg.to_dict(), "device": "cpu", "device_name": "x86_64"})
        + "\n", encoding="utf-8")
    (run_dir / "output.log").write_text("", encoding="utf-8")
    return run_id


async def measure(rate: int, seconds: float) -> dict:
    from tinylab.service.doctor import DoctorReport
    from tinylab.tui.app import create_app
    from tinylab.tui.screens.run import RunScreen

    root = Path(tempfile.mkdtemp(prefix="tinylab-flood-"))
    log_path = None
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        run_id = fake_running_run(root, writer.pid)
        log_path = root / run_id / "output.log"
        flood = subprocess.Popen([sys.executable, "-c", WRITER if rate else "import time; time.sleep(3600)",
                                  str(log_path), str(rate)])
        handled: list[float] = []
        original = RunScreen.action_next_pane

        def timed(self):
            handled.append(time.perf_counter())
            original(self)

        RunScreen.action_next_pane = timed
        app = create_app(root, doctor=DoctorReport.from_json({"profilers": {}}))
        latencies, stalls = [], [0.0]
        async with app.run_test(size=(80, 24)) as pilot:
            app.open_run(run_id)
            await pilot.pause(1.0)
            last = [time.perf_counter()]

            def tick():
                now = time.perf_counter()
                stalls.append(now - last[0] - 0.02)
                last[0] = now

            app.set_interval(0.02, tick)
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                before = len(handled)
                t0 = time.perf_counter()
                await pilot.press("t")
                while len(handled) == before:
                    await asyncio.sleep(0.001)
                latencies.append(handled[-1] - t0)
                await asyncio.sleep(0.2)
            shown = app.screen.query_one("#log").line_count
        flood.terminate()
        flood.wait()
        written = sum(1 for _ in open(log_path, "rb"))
        return {"latencies": latencies, "stall": max(stalls), "written": written, "shown": shown}
    finally:
        writer.terminate()
        writer.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10_000, help="log lines per second (0: a quiet baseline)")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    result = asyncio.run(measure(args.rate, args.seconds))
    lat = sorted(result["latencies"])
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    print(f"log flood {args.rate:,} lines/s for {args.seconds:.0f} s on {os.cpu_count()} CPUs "
          f"(load average {os.getloadavg()[0]:.1f}): key latency median {1000 * statistics.median(lat):.0f} ms, "
          f"p95 {1000 * p95:.0f} ms, max {1000 * lat[-1]:.0f} ms over {len(lat)} presses; "
          f"worst event-loop stall {1000 * result['stall']:.0f} ms; "
          f"{result['written']:,} lines written, the Log keeps the last {result['shown']:,}")


if __name__ == "__main__":
    main()
