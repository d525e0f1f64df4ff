#!/usr/bin/env bash
# Device call for #14's headroom stage: greedy in wall time over the v2 space (search.headroom in
# params.yaml) on the H200, every comparison into the store, each kernel's search into data/headroom/.
# SECTION=census: stage census instead (search.census: step 0 alone on more kernels, into data/census/).
# BUDGET: seconds after which no kernel starts; LIMIT: hard stop. The parts, the report, the store and the
# log come back in $OUT/headroom_$TAG.tgz (refreshed at the end; a cut-off run keeps its parts).
#   (on the device) BUDGET=300 LIMIT=380 TAG=h1 bash scripts/gpu_run_headroom.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1 CI=true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; TAG=${TAG:-h1}; LOGS=logs_$TAG; mkdir -p $LOGS; S=${SECTION:-headroom}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv; nproc;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; } \
  > $LOGS/provenance.txt 2>&1
timeout ${LIMIT:-380} python3 -m chronos.stages.headroom --params params.yaml --backend gpu --section $S \
  --budget ${BUDGET:-300} --store data/store/measurements.sqlite --out reports/$S.json > $LOGS/$S.log 2>&1
echo "$S: exit $? at $SECONDS s; $(date -u)" | tee -a $LOGS/$S.log
python3 -c "import sqlite3; c = sqlite3.connect('data/store/measurements.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
tar czf "$OUT/${S}_$TAG.tgz" data/$S reports/$S.json data/store/measurements.sqlite $LOGS
tail -8 $LOGS/$S.log
