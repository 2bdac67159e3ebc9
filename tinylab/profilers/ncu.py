"""Nsight Compute (`ncu`): per-kernel GPU time from replayed launches on NVIDIA GPUs.

`ncu --csv --metrics gpu__time_duration.sum --print-units base --launch-count N --log-file
<out>/ncu.csv --` (docs/formats.md 6.1): one metric keeps each launch to a single replay pass, base
units make every duration ns, and --log-file keeps ncu's CSV apart from the trainer's output
(it still starts with ==PROF== lines, which the parser skips). ncu serializes and replays every
kernel, so a training loop is limited to the first N launches (RunConfig.ncu_launch_count:
`--ncu-launch-count`, default 2000, enough for a few steps of the default model).
"""

from __future__ import annotations

from pathlib import Path

from tinylab.profilers.base import (
    CollectResult,
    Config,
    Setting,
    Viewer,
    WrapperAdapter,
    list_artifacts,
    read_table,
)

LOG_FILE = "ncu.csv"
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
#: ncu replays each launch: the first 2,000 cover a few steps of the workshop model.
LAUNCH_COUNT = 2000


class NcuAdapter(WrapperAdapter):
    name = "ncu"
    executable = "ncu"
    vendor = "nvidia"
    description = "NVIDIA Nsight Compute: per-kernel GPU time of each launch (kernel replay)"
    fix = "install Nsight Compute (CUDA toolkit or nsight-compute package) and put ncu on PATH; needs an NVIDIA GPU"
    settings = (
        Setting("ncu_launch_count", int, LAUNCH_COUNT, low=1, high=10**7, metavar="N", env="TINYLAB_NCU_LAUNCH_COUNT",
                help=f"ncu: profile the first N kernel launches (default {LAUNCH_COUNT})"),
    )
    traces = True
    rank_limit = "Nsight Compute replays each kernel, and a replayed collective waits for ranks that are not replaying"
    viewers = (Viewer((".ncu-rep",), "kernel details, in the Nsight Compute GUI or in a terminal:",
                      ("ncu-ui FILE", "ncu --import FILE --page details")),)

    def __init__(self, launch_count: int = LAUNCH_COUNT):
        self.launch_count = launch_count

    @classmethod
    def from_config(cls, config: Config | None) -> "NcuAdapter":
        return cls(config.ncu_launch_count) if config is not None else cls()

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        return [
            self.argv0(), "--csv", "--metrics", "gpu__time_duration.sum", "--print-units", "base",
            "--launch-count", str(self.launch_count), "--log-file", str(out_dir / LOG_FILE), "--",
        ]  # fmt: skip

    def collect(self, out_dir: Path) -> CollectResult:
        artifacts = list_artifacts(out_dir)
        log = out_dir / LOG_FILE
        if not log.is_file():
            return CollectResult(artifacts, None, f"ncu wrote no {LOG_FILE} (did the run start?)", None)
        table, fmt, note = read_table(log)
        from tinylab.core.safeio import read_tail

        if table is None and PERMISSION_ERROR in read_tail(log, 1 << 20).decode("utf-8", "replace"):
            note = (
                "ncu may not read GPU performance counters here (ERR_NVGPUCTRPERM): "
                "see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
            )
        return CollectResult(artifacts, table, note, fmt)
