#!/usr/bin/env bash
# The multi-GPU checks of a node with 2+ GPUs, from the repo root, in two device calls:
#   bash tests/gpu/scale_out.sh table       # scaling table: DDP, FSDP2, ZeRO-2 at 1, 2, 4, 8 ranks
#   bash tests/gpu/scale_out.sh lessons     # the scaling and straggler exercises, and one run's hotspots per rank
# Needs DeepSpeed (carried as wheels, see /work/.library/device/README.md). Logs under $OUT.
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TINYLAB_PROGRESS_FILE=/tmp/tinylab-progress.json
# NVLink multicast off in every process (torchrun passes the environment on to the ranks)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
python3 -c "import torch, deepspeed; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'deepspeed', deepspeed.__version__)"
case "${1:-table}" in
table)
  timeout "${TABLE_TIMEOUT:-420}" python3 tests/gpu/scaling.py --out "$OUT/scaling" --budget-s "${BUDGET:-360}" > "$OUT/scaling.log" 2>&1
  grep -v '^{' "$OUT/scaling.log" | tail -30
  ;;
lessons)
  { CUDA_VISIBLE_DEVICES=0,1 timeout 230 sh -c 'for s in 1 2 3 4; do python3 -m tinylab exercises check scaling --step $s --runs-dir /tmp/ex-scaling; done' > "$OUT/ex_scaling.log" 2>&1; } &
  { CUDA_VISIBLE_DEVICES=2,3 timeout 230 sh -c 'for s in 1 2; do python3 -m tinylab exercises check straggler --step $s --runs-dir /tmp/ex-straggler; done' > "$OUT/ex_straggler.log" 2>&1; } &
  wait
  profiled=$(ls -d /tmp/ex-scaling/*/profiles 2>/dev/null | head -1)
  [ -n "$profiled" ] && python3 -m tinylab hotspots "$(dirname "$profiled")" --rank 1 2>&1 | head -24
  grep -hE "^(PASS|FAIL|SKIP)|checks passed|failed|error|^  run |^      [a-z_]+=" "$OUT"/ex_*.log | cut -c1-150
  ;;
esac
