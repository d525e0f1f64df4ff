#!/usr/bin/env bash
# One device call (nvidia-h200) after the architecture refactor (#11): does the measurement layer still work
# on a real GPU through the new seams (measure takes `realize` as a callable, the atlas lookup is injected,
# stages go through chronos.config and run_stage, the optimize path lives in chronos.optimize.cycles)?
#   tests       the GPU tests of the measurement layer and the atlas (faults, side-by-side rounds, recipes)
#   baseline    stage baseline on the GPU for two kernels, into a scratch store
#   optimize    chronos.optimize.cycles on two Triton kernels on the GPU (beam 4)
#   (on the device) bash scripts/gpu_run_refactor_check.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1 CI=true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; } \
  > "$OUT/provenance.txt" 2>&1
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/measure tests/search > "$OUT/tests.log" 2>&1
echo "tests: exit $?" | tee -a "$OUT/summary.txt"; tail -3 "$OUT/tests.log"
timeout 120 python3 -m chronos.stages.baseline --backend gpu --store /tmp/scratch.sqlite \
  --only 'gemm_tile\(4,6,4\)|rowmax_f32' --out "$OUT/baseline_gpu.json" > "$OUT/baseline.log" 2>&1
echo "baseline: exit $?" | tee -a "$OUT/summary.txt"; tail -3 "$OUT/baseline.log"
timeout 200 python3 scripts/gpu_check_optimize.py --store /tmp/scratch.sqlite --n 2 --beam 4 \
  > "$OUT/optimize.log" 2>&1
echo "optimize: exit $?" | tee -a "$OUT/summary.txt"; tail -3 "$OUT/optimize.log"
