#!/usr/bin/env bash
# One device call: optionally the GPU fault tests (FAULTS=1), the atlas last (the plan's unmeasured SASS variants
# on every GPU, in the time left before DEADLINE_S; ATLAS=0 skips it), the Triton references (TRITON=1), the
# policy's Triton evaluation (EVALUATE=1), the measurement benchmark (BENCH=1) and a
# second measurement of already measured atlas kernels (REPEAT=regex). The plan file and the
# measurement store come back in $OUT.
#   (on the device) DEADLINE_S=540 TRITON=1 REPEAT='gemm_tile\\(2,2,' bash scripts/gpu_run_atlas.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NGPU=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; nproc; } \
  > "$OUT/provenance.txt" 2>&1
sed "s/^  gpus: 1 /  gpus: $NGPU /" params.yaml > /tmp/params_gpu.yaml
if [ "${FAULTS:-0}" = 1 ]; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/measure/test_gpu.py > "$OUT/faults.log" 2>&1
  echo "faults: exit $?" | tee -a "$OUT/summary.txt"
fi
if [ -n "${REPEAT:-}" ]; then  # a second run over kernels an earlier call measured: repeatability
  timeout 150 python3 experiments/measurement/atlas_repeat.py --params /tmp/params_gpu.yaml --kernel "$REPEAT" \
    --json "$OUT/repeat.json" > "$OUT/repeat.log" 2>&1
  echo "repeat: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
fi
if [ "${TRITON:-0}" = 1 ]; then
  timeout "${TRITON_S:-240}" python3 -m chronos.stages.search_triton --backend gpu --params /tmp/params_gpu.yaml \
    --kernels data/kernels --store data/store/measurements.sqlite --out "$OUT/triton_search.json" > "$OUT/triton.log" 2>&1
  echo "search_triton: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
fi
if [ "${EVALUATE:-0}" = 1 ]; then
  timeout 120 python3 -m chronos.stages.evaluate --backend gpu --params /tmp/params_gpu.yaml --kernels data/kernels \
    --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt \
    --out "$OUT/measure_triton_results.json" > "$OUT/evaluate.log" 2>&1
  echo "evaluate: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
fi
if [ "${BENCH:-0}" = 1 ]; then
  timeout 200 python3 benchmarks/bench_measure.py --variants 300 --repeat 12 > "$OUT/bench.log" 2>&1
  echo "bench: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
fi
# The atlas gets the time left before DEADLINE_S (seconds since this script started), less a margin.
ATLAS_S=$(( ${DEADLINE_S:-540} - SECONDS - 20 ))
if [ "${ATLAS:-1}" = 1 ] && [ "$ATLAS_S" -gt 90 ]; then
  cmd=(python3 -m chronos.stages.atlas --backend gpu --params /tmp/params_gpu.yaml --atlas data/store/atlas.sqlite
       --out "$OUT/oracle.json" --scratch-store /tmp/atlas_full.sqlite --only-planned --kernels-per-batch 2 --budget-s $((ATLAS_S - 75)))
  echo "${cmd[*]}" > "$OUT/atlas.log"
  timeout "$ATLAS_S" "${cmd[@]}" >> "$OUT/atlas.log" 2>&1
  echo "atlas: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
  # The plan file outgrows what a call may bring back (16 MiB): bring this call's records instead, compactly;
  # `python -m chronos.search.atlas_records merge` folds them into the plan file here.
  python3 -m chronos.search.atlas_records export /tmp/atlas_full.sqlite "$OUT/atlas_records.jsonl.gz"
  grep "measured" "$OUT/atlas.log" | tail -20
fi
if [ "${TRITON:-0}" = 1 ] || [ "${EVALUATE:-0}" = 1 ]; then
  python3 -c "import sqlite3; sqlite3.connect('data/store/measurements.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
  cp data/store/measurements.sqlite "$OUT/measurements.sqlite"
fi
