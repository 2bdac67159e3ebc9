#!/usr/bin/env bash
# One device call: GPU tests, then the bench. Run from the repo root on a GPU machine:
#   bash tests/gpu/gpu_check.sh [bench args...]
# Writes logs and bench JSON under $OUT (or ./gpu_out).
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout "${TEST_TIMEOUT:-240}" python3 -m pytest ${TESTS:-tests/kernels tests/models tests/training} -q -x -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  python3 -m tinylab bench "$@" --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -40
fi
