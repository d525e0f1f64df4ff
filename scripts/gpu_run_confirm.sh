#!/usr/bin/env bash
# One device call (nvidia-h200-x2) around stage confirm and the Triton evaluation:
#   FAULTS=1        the GPU tests (tests/measure/test_gpu.py)
#   RETRY=regex     re-measure those Triton kernels' invalid records and search them again (search_triton)
#   confirm         stage confirm's measurement (gemm_tile contenders side by side) -> confirm_gemm_tile.json;
#                   CONFIRM_REALLOC=1 adds a second one with fresh buffers every round -> confirm_realloc.json
#   evaluate        the policy's Triton evaluation with its beam (predict.beam); BEAM16=1 adds k=16 (ablation)
#   REPEAT=1        the protocol benchmark on both GPUs (to compare with an earlier call's runs) and the atlas
#                   repeat of gemm_tile(2,2,2)
# Logs go into one tarball: a call brings back a limited number of files.
#   (on the device) FAULTS=1 REPEAT=1 bash scripts/gpu_run_confirm.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/logs
NGPU=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; nproc; } \
  > /tmp/logs/provenance.txt 2>&1
sed "s/^  gpus: 1 /  gpus: $NGPU /" params.yaml > /tmp/params_gpu.yaml
step() {  # $1 = name, $2 = timeout, rest = command
  local name=$1 t=$2; shift 2
  timeout "$t" "$@" > "/tmp/logs/$name.log" 2>&1
  echo "$name: exit $? at $(date -u +%FT%TZ)" | tee -a /tmp/logs/summary.txt
  tail -4 "/tmp/logs/$name.log"
}
if [ "${FAULTS:-0}" = 1 ]; then step faults 150 python3 -m pytest -q -p no:cacheprovider tests/measure/test_gpu.py; fi
if [ -n "${RETRY:-}" ]; then
  step retry 200 python3 -m chronos.stages.search_triton --backend gpu --params /tmp/params_gpu.yaml --only "$RETRY" \
    --retry-invalid --out /tmp/logs/triton_search_retry.json
fi
step confirm 240 python3 -m chronos.stages.confirm --measure --params /tmp/params_gpu.yaml --out-data "$OUT/confirm_gemm_tile.json"
if [ "${CONFIRM_REALLOC:-0}" = 1 ]; then
  step confirm_realloc 240 python3 -m chronos.stages.confirm --measure --realloc --params /tmp/params_gpu.yaml \
    --out-data "$OUT/confirm_realloc.json"
fi
step evaluate 200 python3 -m chronos.stages.evaluate --backend gpu --params /tmp/params_gpu.yaml --kernels data/kernels \
  --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt --out "$OUT/measure_triton_results.json"
if [ "${BEAM16:-0}" = 1 ]; then
  sed "s/^  beam: 8 /  beam: 16 /" /tmp/params_gpu.yaml > /tmp/params_beam16.yaml
  step evaluate_beam16 200 python3 -m chronos.stages.evaluate --backend gpu --params /tmp/params_beam16.yaml \
    --kernels data/kernels --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt \
    --out /tmp/logs/measure_triton_results_beam16.json
fi
python3 -c "import sqlite3; sqlite3.connect('data/store/measurements.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
cp data/store/measurements.sqlite "$OUT/measurements.sqlite"
if [ "${REPEAT:-0}" = 1 ]; then
  KERNELS='gemm_tile\((2,2,2|2,8,4|4,6,8|6,4,2|8,8,8)\)'
  for g in 0 1; do
    CUDA_VISIBLE_DEVICES=$g timeout 150 python3 experiments/measurement/repeat_protocol.py --kernel "$KERNELS" \
      --json "/tmp/logs/repeat_${TAG:-x}$g.json" > "/tmp/logs/repeat_${TAG:-x}$g.log" 2>&1 &
  done
  wait; echo "repeat protocol: done at $(date -u +%FT%TZ)" | tee -a /tmp/logs/summary.txt
  step atlas_repeat 150 python3 experiments/measurement/atlas_repeat.py --params /tmp/params_gpu.yaml --kernel 'gemm_tile\(2,2,2\)' \
    --json /tmp/logs/atlas_repeat.json
fi
tar czf "$OUT/logs.tar.gz" -C /tmp logs
