#!/usr/bin/env bash
# The bench with its GEMM floor (the step's GEMMs replayed in a CUDA graph) for v1..v4 and the
# compiled peer, fp32 and bf16, at one sequence length; checks floor% <= 100 (+5% noise).
# Run from the repo root on an H200 (about 4-5 minutes per sequence length):
#   bash tests/gpu/bench_floor.sh 128
#   bash tests/gpu/bench_floor.sh 1024
# Writes $OUT/bench_floor_s<SEQ>.json and .log (OUT defaults to ./gpu_out). Copy the JSON to
# tests/gpu/results/h200-floor-s<SEQ>.json: tests/training/test_bench.py then holds it to the invariant.
set -u -o pipefail
SEQ=${1:-128}
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
JSON="$OUT/bench_floor_s$SEQ.json"
python3 -m tinylab bench --cases v1,v2,v2+compile+graph,v3,v4 --precisions fp32,bf16 --seq-lens "$SEQ" \
  --repeats 2 --num-steps 20 --roofline --out "$JSON" 2>&1 | tee "$OUT/bench_floor_s$SEQ.log" | tail -16
python3 - "$JSON" <<'PY'
import json, sys
from tinylab.training.bench import FLOOR_NOISE
doc = json.load(open(sys.argv[1]))
print(f"\n{'case':<18} {'prec':<5} {'seq':>5} {'step ms':>8} {'floor ms':>9} {'floor%':>7}  verdict")
bad = 0
for r in doc["rows"]:
    share = r.get("of_gemm_floor")
    ok = share is not None and share <= 1 + FLOOR_NOISE
    bad += not ok
    print(f"{r['case']:<18} {r['precision']:<5} {r['seq_len']:>5} {r['step_ms'] or 0:>8.2f} "
          f"{r['gemm_floor_ms'] or 0:>9.3f} {100 * (share or 0):>6.0f}%  {'ok' if ok else 'ABOVE FLOOR' if share else 'no floor'}")
print(f"floors: " + ", ".join(f"{f['precision']} s{f['seq_len']} {f['floor_ms']:.3f} ms ({f['gemm_tflops']:.0f} TFLOP/s, "
                              f"{f['gemms']} GEMMs)" for f in doc.get("gemm_floors", [])))
sys.exit(1 if bad else 0)
PY
