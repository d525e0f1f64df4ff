#!/usr/bin/env bash
# One device call (nvidia-h200-x2): is the run-to-run shift of stage confirm a property of the GPU? Runs the
# confirm measurement on one GPU at a time: GPU 0 and GPU 1 at once (g0a, g1a), then both again (g0b, g1b).
#   (on the device) bash scripts/gpu_run_confirm_gpus.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > "$OUT/provenance.txt"
one() {  # $1 = GPU, $2 = run name
  CUDA_VISIBLE_DEVICES=$1 timeout 200 python3 -m chronos.stages.confirm --measure --params params.yaml \
    --scratch "/tmp/scratch_$2.sqlite" --out-data "$OUT/confirm_$2.json" > "/tmp/confirm_$2.log" 2>&1
  echo "confirm $2 (GPU $1): exit $? at $(date -u +%FT%TZ)"; tail -1 "/tmp/confirm_$2.log"
}
one 0 g0a & one 1 g1a & wait
one 1 g1b & one 0 g0b & wait
for p in "g0a g0b" "g1a g1b" "g0a g1a" "g0b g1b"; do
  set -- $p
  echo "== $1 vs $2"
  python3 experiments/measurement/repeat_protocol.py --confirm "$OUT/confirm_$1.json" "$OUT/confirm_$2.json" | python3 -c "
import json, sys
for k, v in json.load(sys.stdin).items():
    if k != 'files': print(f\"{k:30s} median {100*v['median']:.2f}% p95 {100*v['p95']:.2f}% within {100*v['within']:.0f}%\")"
done
