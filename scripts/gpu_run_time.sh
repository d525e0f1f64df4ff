#!/usr/bin/env bash
# Device calls for #12 (wall time is the truth). STEPS picks what runs, in this order:
#   suites    build the LLM tier and the probes with Triton (scripts/make_triton_suite.py --tier llm|probes)
#   aa        stage aa on the GPU (the A/A test) into data/store/measurements.sqlite
#   search    stage search_triton (greedy in wall time, both tiers)
#   evaluate  stage evaluate (the policy through the optimize path in time, both tiers, probes)
#   cross     experiments/measurement/cross_run.py (10 kernels' best vs baseline, fresh scratch store; CROSS_ROUNDS
#             overrides timing.rounds, CROSS_MAX_ROUNDS timing.max_rounds) -> cross_$TAG.json
#   drift     experiments/measurement/drift.py -> drift_$TAG.json
#   gputests  the GPU tests (pytest -m gpu) of measure and search
# The store, the reports and the built tiers come back in one $OUT/result_$TAG.tgz (the device returns a
# limited number of files), refreshed after every step.
#   (on the device) STEPS="suites aa" TAG=a bash scripts/gpu_run_time.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1 CI=true
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; TAG=${TAG:-a}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv;
  nproc; $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda, triton; print("pycuda", pycuda.VERSION_TEXT, "triton", triton.__version__)'; } \
  > "$OUT/provenance_$TAG.txt" 2>&1
STORE=data/store/measurements.sqlite
step() { echo "== $1 $(date -u +%T)" | tee -a "$OUT/summary_$TAG.txt"; }
save_store() {  # after every step: a call cut off by its time limit still returns what was measured
  python3 -c "import sqlite3; c = sqlite3.connect('$STORE'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
  tar czf "$OUT/result_$TAG.tgz" $STORE reports/aa.json reports/triton_search.json \
    reports/measure_triton_results.json data/kernels/triton_llm data/kernels/probes 2>/dev/null
}
for s in ${STEPS:-}; do
  case $s in
    suites)
      step suites
      for t in llm probes; do
        timeout 300 python3 scripts/make_triton_suite.py --tier $t > "$OUT/suite_$t.log" 2>&1
        echo "suite $t: exit $?" | tee -a "$OUT/summary_$TAG.txt"; tail -3 "$OUT/suite_$t.log"
      done
      save_store ;;
    aa|search_triton|evaluate)
      step $s
      timeout ${STAGE_TIMEOUT:-400} python3 -m chronos.stages.$s --params params.yaml --backend gpu --store $STORE \
        > "$OUT/${s}_$TAG.log" 2>&1
      echo "$s: exit $?" | tee -a "$OUT/summary_$TAG.txt"; tail -4 "$OUT/${s}_$TAG.log"
      save_store ;;
    cross)
      step cross
      timeout 200 python3 experiments/measurement/cross_run.py ${CROSS_ROUNDS:+--rounds $CROSS_ROUNDS} \
        ${CROSS_MAX_ROUNDS:+--max-rounds $CROSS_MAX_ROUNDS} \
        --json "$OUT/cross_$TAG.json" > "$OUT/cross_$TAG.log" 2>&1
      echo "cross: exit $?" | tee -a "$OUT/summary_$TAG.txt"; tail -3 "$OUT/cross_$TAG.log" ;;
    drift)
      step drift
      timeout 300 python3 experiments/measurement/drift.py --json "$OUT/drift_$TAG.json" > "$OUT/drift_$TAG.log" 2>&1
      echo "drift: exit $?" | tee -a "$OUT/summary_$TAG.txt"; tail -3 "$OUT/drift_$TAG.log" ;;
    gputests)
      step gputests
      timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/measure tests/search \
        > "$OUT/gputests_$TAG.log" 2>&1
      echo "gputests: exit $?" | tee -a "$OUT/summary_$TAG.txt"; tail -3 "$OUT/gputests_$TAG.log" ;;
  esac
done
save_store
step done
