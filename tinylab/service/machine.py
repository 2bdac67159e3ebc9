"""What the machine offers a run: how many GPUs torch can use, and whose.

The CLI probes it in its own process (importing torch only when a GPU device node exists, so a
CPU machine's `tinylab run --detach` stays fast); the lab takes it from the doctor report its
child process collected. Both then decide the same way: `device_type` turns a requested device
into the one the trainer will get, or a one-line error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from tinylab.config import ConfigError
from tinylab.profilers.base import gpu_vendors, usable_cpus

if TYPE_CHECKING:
    from tinylab.service.doctor import DoctorReport


@dataclass(frozen=True)
class Machine:
    gpus: int = 0  # GPUs torch can use
    vendor: str | None = None  # "nvidia" or "amd" when torch sees a GPU
    gpu_name: str | None = None
    gpu_memory_bytes: int | None = None  # of one GPU
    host_memory_bytes: int | None = None
    cpus: int | None = None  # CPU cores this process may run on (None: unknown)

    def memory_bytes(self, device_type: str) -> int | None:
        """The memory a run on this device type may use (None: unknown, nothing is refused)."""
        return self.gpu_memory_bytes if device_type == "cuda" else self.host_memory_bytes

    @property
    def has_gpu(self) -> bool:
        return self.gpus > 0

    def device_type(self, requested: str) -> str:
        """"cpu" or "cuda" for a requested device ("auto", "cpu", "cuda", "cuda:N")."""
        if requested == "auto":
            return "cuda" if self.has_gpu else "cpu"
        if requested == "cpu":
            return "cpu"
        if not self.has_gpu:
            raise ConfigError(f"--device {requested} requested but no CUDA/ROCm GPU is visible to torch")
        index = requested.partition(":")[2]
        if index and (not index.isdigit() or int(index) >= self.gpus):
            raise ConfigError(f"--device {requested}: this machine has {self.gpus} GPU(s), cuda:0 to cuda:{self.gpus - 1}")
        return "cuda"

    def resolve(self, requested: str) -> str:
        """The device string a step's run is stored with: "auto" made concrete ("cuda" or "cpu")."""
        return self.device_type(requested) if requested == "auto" else requested

    @staticmethod
    def gpu_devices() -> bool:
        """Whether a GPU's device node is visible here (cheap: neither torch nor a driver library is
        loaded). Without one the machine is surely CPU-only; with one, torch decides (probe)."""
        return bool(gpu_vendors())

    @classmethod
    def probe(cls) -> "Machine":
        """This machine, as the trainer's torch will see it."""
        host, cpus = psutil.virtual_memory().total, usable_cpus()
        if not cls.gpu_devices():
            return cls(host_memory_bytes=host, cpus=cpus)  # no GPU device node: no torch import needed to know
        import torch

        if not torch.cuda.is_available():
            return cls(host_memory_bytes=host, cpus=cpus)
        return cls(torch.cuda.device_count(), "amd" if getattr(torch.version, "hip", None) else "nvidia",
                   torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).total_memory, host, cpus)

    @classmethod
    def from_doctor(cls, report: DoctorReport | None) -> "Machine":
        """From the doctor report (the lab's view): only a GPU torch can use counts."""
        host = report.memory_bytes if report else None
        cpus = report.cpus if report else None
        gpu = report.gpu if report else None
        if gpu is None or not gpu.torch_sees_gpu:
            return cls(host_memory_bytes=host, cpus=cpus)
        memory = gpu.memory_gb
        return cls(int(gpu.count or 1), gpu.vendor, gpu.name,
                   int(memory * 2**30) if isinstance(memory, (int, float)) else None, host, cpus)
