"""Where the test data lives."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
#: Real profiler outputs (every sub-folder has a SOURCE.txt).
FIX = TESTS / "fixtures"
#: Stand-in profiler executables.
BIN = TESTS / "profilers" / "bin"
#: Stand-in Slurm commands (sbatch, squeue, sacct, scancel, scontrol, srun).
SLURM_BIN = TESTS / "support" / "slurm_bin"
