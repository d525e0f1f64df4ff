#!/usr/bin/env bash
# One device call for the measurement issue: fault tests, the 97-kernel baseline into the repo's store,
# a diagnosis of any invalid baseline, and the measurement benchmarks. Logs and results go to $OUT.
#   (on the device) bash scripts/gpu_run_measure.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; } \
  > "$OUT/provenance.txt" 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/measure/test_gpu.py -s > "$OUT/faults.log" 2>&1
echo "faults: exit $?" | tee -a "$OUT/summary.txt"
timeout 240 python3 -m chronos.stages.baseline --params params.yaml --kernels data/kernels \
  --store data/store/measurements.sqlite --out reports/baseline.json --backend gpu > "$OUT/baseline.log" 2>&1
echo "baseline: exit $?" | tee -a "$OUT/summary.txt"
python3 - >> "$OUT/summary.txt" <<'PY'
import json
d = json.load(open("reports/baseline.json"))
bad = [k for k in d["kernels"] if not k["valid"]]
print("baseline valid:", len(d["kernels"]) - len(bad), "/", len(d["kernels"]), [(k["kernel"], k["reason"]) for k in bad])
PY
for k in $(python3 -c 'import json; print(" ".join(k["kernel"] for k in json.load(open("reports/baseline.json"))["kernels"] if not k["valid"]))'); do
  timeout 120 python3 scripts/gpu_diag_kernel.py "$k" >> "$OUT/diag.log" 2>&1
done
timeout 200 python3 benchmarks/bench_measure.py --variants 300 --repeat 12 > "$OUT/bench.log" 2>&1
echo "bench: exit $?" | tee -a "$OUT/summary.txt"
tar czf "$OUT/results.tgz" data/store reports/baseline.json
