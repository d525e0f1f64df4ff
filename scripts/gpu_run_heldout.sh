#!/usr/bin/env bash
# Device call for #14's held-out evaluation: the picks stage heldout made on a CPU (reports/heldout.json:
# per held-out kernel the policy's, its beam's, BC's, the fixed action's and the oracle's single action)
# timed again on the H200, each kernel's distinct picks beside the baseline in one comparison, into the
# store; stage heldout on replay then scores every method on these comparisons. LIMIT: hard stop. The store,
# the result and the log come back in $OUT/heldout_$TAG.tgz.
#   (on the device) LIMIT=300 TAG=v1 bash scripts/gpu_run_heldout.sh   (PICKS=file: another run's picks)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1 CI=true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; TAG=${TAG:-v1}; LOGS=logs_$TAG; mkdir -p $LOGS
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv; nproc;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; } \
  > $LOGS/provenance.txt 2>&1
timeout ${LIMIT:-300} python3 -m chronos.stages.heldout --params params.yaml --picks ${PICKS:-reports/heldout.json} \
  --backend gpu --store data/store/measurements.sqlite --out $LOGS/heldout_gpu.json > $LOGS/heldout.log 2>&1
echo "heldout --picks: exit $? at $SECONDS s; $(date -u)" | tee -a $LOGS/heldout.log
python3 -c "import sqlite3; c = sqlite3.connect('data/store/measurements.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
tar czf "$OUT/heldout_$TAG.tgz" data/store/measurements.sqlite $LOGS
tail -3 $LOGS/heldout.log
