"""Runs for `compare --repeat`'s tests written in no time: a finished (or failed) run folder of a
config with the samples/s a test chose, and a stand-in for Lab.launch that writes one a launch."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from support.runs import tiny_config, write_events

from tinylab.config import RunConfig
from tinylab.runs.record import short_id
from tinylab.runs.store import Run, mark_run

_clock = itertools.count(1)


def written_run(root: Path, samples_per_s: float | None, cfg: RunConfig | None = None) -> Run:
    """A run of `cfg` (default: the tiny CPU config) as the trainer leaves it: finished with
    `samples_per_s` (its steps' spread ±1 %), or failed when that is None."""
    n = next(_clock)
    cfg = (cfg or tiny_config()).resolved()
    run_dir = root / f"20260101-{n // 60:04d}{n % 60:02d}-{n % 0xFFFF:04x}"
    run_dir.mkdir(parents=True)
    mark_run(run_dir)
    (run_dir / "config.json").write_text(cfg.to_json(), encoding="utf-8")
    events = [{"event": "start", "time": 1_767_225_600.0 + n, "config": cfg.to_dict(), "device": str(cfg.device),
               "device_name": "x86_64", "pid": 4242}]
    if samples_per_s is None:
        events += [{"event": "error", "time": 1_767_225_601.0 + n, "type": "RuntimeError", "message": "boom"},
                   {"event": "exit", "time": 1_767_225_601.0 + n, "returncode": 1, "signal": None}]
    else:
        ms = 4000 / samples_per_s
        events += [{"event": "summary", "time": 1_767_225_601.0 + n, "samples_per_s": samples_per_s,
                    "tokens_per_s": 32 * samples_per_s, "step_ms_median": ms, "step_ms_p10": ms * 0.99,
                    "step_ms_p90": ms * 1.01, "steps": 21, "measured_steps": 20, "final_loss": 6.0},
                   {"event": "exit", "time": 1_767_225_602.0 + n, "returncode": 0, "signal": None}]
    write_events(run_dir, events)
    return Run(run_dir)


@dataclass
class FakeLaunches:
    """Lab.launch replaced: each launch writes a run of the config it was given, its samples/s the
    next of its side's `figures` (None: it fails); `sides` maps the short id a repeat's label
    names to its side. `launched` lists (side, config) in launch order."""

    root: Path
    sides: dict[str, str]
    figures: dict[str, list[float | None]]
    launched: list[tuple[str, RunConfig]] = field(default_factory=list)

    def patch(self, monkeypatch, cls) -> "FakeLaunches":
        """Put it in place of `cls.launch` (Lab, or the lab's Backend)."""
        monkeypatch.setattr(cls, "launch", lambda _lab, cfg: self(cfg))
        return self

    def __call__(self, cfg: RunConfig) -> Run:
        side = self.sides[cfg.label.rsplit(" of ", 1)[1]]
        self.launched.append((side, cfg))
        return written_run(self.root, self.figures[side].pop(0), cfg)

    @classmethod
    def of(cls, a: Run, b: Run, a_figures: list[float | None], b_figures: list[float | None]) -> "FakeLaunches":
        return cls(a.dir.parent, {short_id(a.id): "a", short_id(b.id): "b"}, {"a": a_figures, "b": b_figures})
