#!/usr/bin/env bash
# One device call (nvidia-h200-x2) for the measurement diagnostics of issue #4:
#  1. compute-sanitizer (memcheck, then initcheck) on attention_d128_kv4096's baseline, each phase of
#     scripts/gpu_diag_kernel.py in its own process (SANITIZE=0 skips);
#  2. experiments/measurement/repeat_protocol.py: one process on each GPU at once (runs a0, a1), then again with the
#     GPUs swapped round (b0, b1): four runs, two per card, to compare protocols within and across cards.
#   (on the device) bash scripts/gpu_run_diag.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv;
  $CHRONOS_PTXAS --version | tail -2; python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)'; nproc;
  command -v compute-sanitizer; } > "$OUT/provenance.txt" 2>&1
KERNELS=${KERNELS:-'gemm_tile\((2,2,2|2,8,4|4,6,8|6,4,2|8,8,8)\)'}
rep() {  # $1 = GPU, $2 = run name
  CUDA_VISIBLE_DEVICES=$1 timeout 240 python3 experiments/measurement/repeat_protocol.py --kernel "$KERNELS" \
    --variants "${VARIANTS:-24}" --json "$OUT/repeat_$2.json" > "$OUT/repeat_$2.log" 2>&1
  echo "repeat $2 (GPU $1): exit $? at $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
}
rep 0 a0 & rep 1 a1 & wait
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt"
rep 1 b1 & rep 0 b0 & wait
python3 experiments/measurement/repeat_protocol.py --compare "$OUT"/repeat_a0.json "$OUT"/repeat_a1.json \
  "$OUT"/repeat_b0.json "$OUT"/repeat_b1.json > "$OUT/repeat_compare.json" 2> "$OUT/repeat_compare.err"
python3 - "$OUT/repeat_compare.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d.items():
    if k != "runs":
        print(f"{k:32s} median {100*v['median']:.2f}%  p95 {100*v['p95']:.2f}%  within {100*v['within']:.0f}%  (n={v['pairs']})")
print(d["runs"])
EOF
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck initcheck; do
    for phase in cubin_run full_measure; do
      timeout 150 compute-sanitizer --tool $tool --print-limit 20 python3 scripts/gpu_diag_kernel.py \
        attention_d128_kv4096 --phase $phase --ptxas "$CHRONOS_PTXAS" > "$OUT/sanitize_${tool}_$phase.log" 2>&1
      echo "sanitize $tool $phase: exit $?" | tee -a "$OUT/summary.txt"
      grep -m5 -E "ERROR SUMMARY|Invalid|Uninitialized|error" "$OUT/sanitize_${tool}_$phase.log"
    done
  done
  timeout 100 python3 scripts/gpu_diag_kernel.py attention_d128_kv4096 --ptxas "$CHRONOS_PTXAS" > "$OUT/diag_attention.log" 2>&1
  echo "diag attention: exit $?" | tee -a "$OUT/summary.txt"; cat "$OUT/diag_attention.log"
fi
