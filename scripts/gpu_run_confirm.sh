#!/usr/bin/env bash
# One device call (nvidia-h200-x2): the GPU tests (FAULTS=1), stage confirm's measurement (gemm_tile
# contenders side by side), the policy's Triton evaluation with its beam (measures what replay lacks), the
# protocol benchmark again (against an earlier call's runs) and the atlas repeat of gemm_tile(2,2,2).
# Logs go into one tarball: a call brings back a limited number of files.
#   (on the device) bash scripts/gpu_run_confirm.sh
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
if [ "${FAULTS:-1}" = 1 ]; then step faults 150 python3 -m pytest -q -p no:cacheprovider tests/measure/test_gpu.py; fi
step confirm 240 python3 -m chronos.stages.confirm --measure --params /tmp/params_gpu.yaml --out-data "$OUT/confirm_gemm_tile.json"
step evaluate 200 python3 -m chronos.stages.evaluate --backend gpu --params /tmp/params_gpu.yaml --kernels data/kernels \
  --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt --out "$OUT/measure_triton_results.json"
python3 -c "import sqlite3; sqlite3.connect('data/store/measurements.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
cp data/store/measurements.sqlite "$OUT/measurements.sqlite"
KERNELS='gemm_tile\((2,2,2|2,8,4|4,6,8|6,4,2|8,8,8)\)'
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 benchmarks/bench_repeat_protocol.py --kernel "$KERNELS" --json /tmp/logs/repeat_c0.json > /tmp/logs/repeat_c0.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 120 python3 benchmarks/bench_repeat_protocol.py --kernel "$KERNELS" --json /tmp/logs/repeat_c1.json > /tmp/logs/repeat_c1.log 2>&1 &
wait; echo "repeat protocol: done at $(date -u +%FT%TZ)" | tee -a /tmp/logs/summary.txt
step atlas_repeat 150 python3 benchmarks/bench_atlas_repeat.py --params /tmp/params_gpu.yaml --kernel 'gemm_tile\(2,2,2\)' --json /tmp/logs/atlas_repeat.json
tar czf "$OUT/logs.tar.gz" -C /tmp logs
grep -h "atlas_repeat\|median" /tmp/logs/atlas_repeat.log | head -20
