#!/usr/bin/env bash
# One device call: why does a Triton kernel's variant fault? KERNEL and ACTIONS (a+b+c) name it. Plain runs of
# the baseline and the variant, repeated, then compute-sanitizer (memcheck, racecheck, synccheck) on the variant.
#   (on the device) KERNEL=attention_d128_kv4096 ACTIONS=st_cache_wb+reorder_cp+maxnreg_255 bash scripts/gpu_run_fault_diag.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; L="$OUT/fault_diag.log"; : > "$L"
for what in "" "$ACTIONS"; do
  for ph in cubin_run full_measure; do
    n=$([ "$ph" = cubin_run ] && echo 20 || echo 5)
    timeout 120 python3 scripts/gpu_diag_kernel.py "$KERNEL" --ptxas "$CHRONOS_PTXAS" --phase $ph --actions "$what" \
      --repeat $n > /tmp/p.log 2>&1
    echo "plain ${what:-baseline} $ph x$n: exit $? | $(grep -c ok /tmp/p.log) ok | $(grep -m1 -io 'error[^|]*' /tmp/p.log | head -c 200)" | tee -a "$L"
  done
done
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 10 python3 scripts/gpu_diag_kernel.py "$KERNEL" \
    --ptxas "$CHRONOS_PTXAS" --phase cubin_run --actions "$ACTIONS" > /tmp/s.log 2>&1
  grep -m1 "cubin_run ok" /tmp/s.log | cut -c1-80 | tee -a "$L"
  echo "sanitizer $tool on $ACTIONS: exit $?" | tee -a "$L"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|hazard|Barrier" /tmp/s.log | head -8 | tee -a "$L"
done
