#!/usr/bin/env bash
# One device call for the atlas: measure the plan's unmeasured SASS variants on every GPU of the machine,
# within a time budget, and bring the plan file (with its `measured` table) back in $OUT.
#   (on the device) ATLAS_S=420 FAULTS=1 bash scripts/gpu_run_atlas.sh
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
ATLAS_S=${ATLAS_S:-420}
cmd=(python3 -m chronos.stages.atlas --backend gpu --params /tmp/params_gpu.yaml --atlas data/store/atlas.sqlite
     --out "$OUT/oracle.json" --scratch-store /tmp/atlas_full.sqlite --only-planned --budget-s $((ATLAS_S - 60)))
echo "${cmd[*]}" > "$OUT/atlas.log"
timeout "$ATLAS_S" "${cmd[@]}" >> "$OUT/atlas.log" 2>&1
echo "atlas: exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
cp data/store/atlas.sqlite "$OUT/atlas.sqlite"
grep "measured" "$OUT/atlas.log" | tail -20
