#!/usr/bin/env bash
# One device call (#14): do L2 evict_last lines outlive the timing flush, and does timing.l2_demote fix it?
# The GPU tests of the side-by-side path (the demote protocol included), then experiments/measurement/l2_demote.py
# (probe + the census's L2 evict_last winners with the demote off and on, into a fresh store under $OUT).
#   (on the device, carry .whl) LIMIT=300 bash scripts/gpu_run_l2_demote.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)';
  git rev-parse HEAD 2>/dev/null; } > "$OUT/provenance.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/measure/test_gpu_compare.py > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$OUT/summary.txt"
timeout "${LIMIT:-300}" python3 experiments/measurement/l2_demote.py --store "$OUT/l2_demote.sqlite" \
  --json "$OUT/l2_demote.json" > "$OUT/l2_demote.log" 2>&1
echo "bench_l2_demote: exit $?" | tee -a "$OUT/summary.txt"
grep -E "^(probe|l2_evict_last|other) " "$OUT/l2_demote.log" >> "$OUT/summary.txt"
