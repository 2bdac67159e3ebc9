"""Machine: what a run gets for a requested device, decided the same way by the CLI and the lab."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tinylab.config import ConfigError
from tinylab.service.doctor import DoctorReport
from tinylab.service.machine import Machine

CPU = Machine()
TWO_GPUS = Machine(2, "nvidia", "NVIDIA H200")


@pytest.mark.parametrize("machine, requested, expected", [
    (CPU, "auto", "cpu"), (CPU, "cpu", "cpu"),
    (TWO_GPUS, "auto", "cuda"), (TWO_GPUS, "cpu", "cpu"), (TWO_GPUS, "cuda", "cuda"), (TWO_GPUS, "cuda:1", "cuda"),
])
def test_device_type(machine, requested, expected):
    assert machine.device_type(requested) == expected


@pytest.mark.parametrize("machine, requested, message", [
    (CPU, "cuda", "--device cuda requested but no CUDA/ROCm GPU is visible"),
    (CPU, "cuda:0", "no CUDA/ROCm GPU is visible"),
    (TWO_GPUS, "cuda:2", "--device cuda:2: this machine has 2 GPU(s), cuda:0 to cuda:1"),
])
def test_a_device_the_machine_lacks_is_a_one_line_error(machine, requested, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        machine.device_type(requested)


def test_resolve_makes_auto_concrete_and_keeps_the_rest():
    assert CPU.resolve("auto") == "cpu" and TWO_GPUS.resolve("auto") == "cuda"
    assert TWO_GPUS.resolve("cuda:1") == "cuda:1"


def test_from_doctor_counts_only_gpus_torch_can_use():
    assert Machine.from_doctor(None) == CPU
    unseen = DoctorReport.from_json({"gpu": {"vendor": "nvidia", "name": "H100", "count": 4, "torch_sees_gpu": False}})
    assert not Machine.from_doctor(unseen).has_gpu
    seen = Machine.from_doctor(DoctorReport.from_json({"gpu": {"vendor": "amd", "name": "AMD Instinct MI300X", "count": 8,
                                                               "torch_sees_gpu": True}}))
    assert seen == Machine(8, "amd", "AMD Instinct MI300X")


def test_probe_on_a_machine_without_gpu_nodes_does_not_import_torch():
    """`tinylab run --detach` on a CPU must not pay for torch: no device node, no import."""
    code = ("import sys; from tinylab.service.machine import Machine; m = Machine.probe(); "
            "print(m.has_gpu, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "", "TINYLAB_GPU_VENDORS": ""})
    assert out.stdout.split() == ["False", "False"], out.stderr
