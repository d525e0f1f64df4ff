#!/usr/bin/env bash
# Device calls for #13 (capture -> tune -> deploy). STEPS picks what runs, in this order:
#   capture   chronos capture of each workload in WORKLOADS (scripts/workloads.py, --profile: Triton's share
#             of GPU time) into data/kernels/captured/<w>; CAP_TIMEOUT seconds each
#   recapture chronos capture of each workload in WORKLOADS again (inputs kept; to /tmp/recap/<w>), and
#             scripts/adopt_inputs.py gives data/kernels/captured/<w> those captured inputs (identical PTX
#             only; a kernel whose tune part has an invalid baseline takes the recapture's spec and is tuned
#             again: TUNE_EXTRA=--retry-invalid; ADOPT_EXTRA=--add-missing: a recaptured kernel the corpus
#             lacks, a launch it could not map before, joins it and is tuned next). The inputs stay on the device (git-ignored, size): a tune
#             with TUNE_EXTRA=--reconfirm-captured in the same call verifies the deployed sets on them
#   tune      chronos tune of each captured workload (gpu backend, Triton's ptxas), TUNE_BUDGET seconds each
#             at most, less when the call's DEADLINE (seconds from the start) would not leave E2E_RESERVE;
#             TUNE_EXTRA: more tune flags (--retry-invalid: kernels whose part file was removed and whose stored
#             comparison has an invalid baseline are measured again)
#   e2e       scripts/e2e.py on each workload in E2E_WORKLOADS that has a tuned DB: step time stock vs tuned,
#             side by side, outputs compared bitwise -> data/kernels/captured/<w>/e2e.json (SKIP_DONE=1: not
#             where that file exists, i.e. a call that finishes what an earlier one left); E2E_EXTRA: more
#             e2e.py flags (--stock-runs 4, --deterministic; E2E_OUT: another result file name than e2e.json)
# A step that would start after DEADLINE is skipped and said so. The captures (without their inputs and
# caches), the store, the tune parts, the e2e results and every log come back in one $OUT/result_$TAG.tgz,
# refreshed after every step (the device returns at most 8 files).
#   (on the device) STEPS="capture tune e2e" WORKLOADS="flex bert" E2E_WORKLOADS=flex TAG=a bash $0
set -uo pipefail
# the wheels carried (.whl: pycuda for tune; .whl_models: transformers for capture and e2e)
python3 -m pip install -q --no-index --no-deps --target /tmp/site $(ls .whl/*.whl .whl_models/*.whl 2>/dev/null) \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD CHRONOS_PTXAS=/usr/local/cuda/bin/ptxas PYTHONUNBUFFERED=1 CI=true
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; TAG=${TAG:-a}; WORKLOADS=${WORKLOADS:-flex bert gpt2 llama}
E2E_WORKLOADS=${E2E_WORKLOADS:-flex}; DEADLINE=${DEADLINE:-100000}; E2E_RESERVE=${E2E_RESERVE:-0}
LOGS=logs_$TAG; mkdir -p $LOGS; SUMMARY=$OUT/summary_$TAG.txt
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv;
  nproc; $CHRONOS_PTXAS --version | tail -2;
  python3 -c 'import pycuda, triton, torch, transformers; print("pycuda", pycuda.VERSION_TEXT, "triton", triton.__version__, "torch", torch.__version__, "transformers", transformers.__version__)';
  python3 -c 'import tokenizers; print("tokenizers", tokenizers.__version__, tokenizers.__file__)'; pwd; } \
  > "$LOGS/provenance.txt" 2>&1
cp "$LOGS/provenance.txt" "$OUT/provenance_$TAG.txt"
STORE=data/store/measurements.sqlite
save() {
  python3 -c "import sqlite3; c = sqlite3.connect('$STORE'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
  cp "$SUMMARY" $LOGS/ 2>/dev/null
  tar czf "$OUT/result_$TAG.tgz" --exclude='*/inputs' --exclude='*/.triton_cache' --exclude='*/.inductor_cache' \
    --exclude='*/.bootstrap' $STORE data/kernels/captured $LOGS 2>/dev/null
}
left() { echo $((DEADLINE - SECONDS)); }
for s in ${STEPS:-}; do
  [ $s = e2e ] && ws=$E2E_WORKLOADS || ws=$WORKLOADS
  n=$(echo $ws | wc -w)
  for w in $ws; do
    d=data/kernels/captured/$w
    if [ $(left) -lt 30 ]; then echo "skip $s $w: $(left) s left of the call's deadline" | tee -a $SUMMARY; continue; fi
    echo "== $s $w $(date -u +%T) ($SECONDS s)" | tee -a $SUMMARY
    case $s in
      capture)
        timeout ${CAP_TIMEOUT:-150} python3 -m chronos.cli capture --out $d --workload $w --force -- \
          python3 scripts/workloads.py $w --steps 2 --profile > "$LOGS/capture_$w.log" 2>&1
        echo "capture $w: exit $?" | tee -a $SUMMARY
        # a workload cut off by its timeout: assemble what it recorded
        [ -f $d/specs.json ] || python3 -m chronos.cli capture --out $d --workload $w --assemble-only \
          >> "$LOGS/capture_$w.log" 2>&1
        head -c 3000 $d/errors-*.log >> "$LOGS/capture_$w.log" 2>/dev/null
        grep "^capture \|triton_share" "$LOGS/capture_$w.log" | tail -4 | tee -a $SUMMARY
        # the workload's profile (Triton share, per-kernel GPU time) with its provenance: tune --order-by
        grep '^{"workload"' "$LOGS/capture_$w.log" | tail -1 | python3 -c "import json, sys; d = json.load(sys.stdin); \
d['provenance'] = {'versions': open('$LOGS/provenance.txt').read().splitlines(), 'command': 'scripts/gpu_run_capture.sh capture, TAG=$TAG'}; \
print(json.dumps(d, indent=1))" > $d/profile.json ;;
      recapture)
        # captured where the corpus was (its path is in the PTX's .file lines and Triton's compile hash, so
        # elsewhere every kernel would get another name): the corpus waits in /tmp meanwhile
        r=/tmp/recap/$w; rm -rf $r /tmp/corpus_$w; mkdir -p /tmp/recap; mv $d /tmp/corpus_$w
        timeout ${CAP_TIMEOUT:-150} python3 -m chronos.cli capture --out $d --workload $w -- \
          python3 scripts/workloads.py $w --steps 2 > "$LOGS/recapture_$w.log" 2>&1
        echo "recapture $w: exit $?" | tee -a $SUMMARY
        [ -f $d/specs.json ] || python3 -m chronos.cli capture --out $d --workload $w --assemble-only \
          >> "$LOGS/recapture_$w.log" 2>&1
        mv $d $r; mv /tmp/corpus_$w $d
        python3 scripts/adopt_inputs.py $r $d --respec-invalid ${ADOPT_EXTRA:-} --out $LOGS/adopt_$w.json \
          >> "$LOGS/recapture_$w.log" 2>&1
        grep "^capture \|^adopt " "$LOGS/recapture_$w.log" | tail -3 | tee -a $SUMMARY ;;
      tune)
        budget=$(( ($(left) - E2E_RESERVE) / n - 60 )); [ $budget -gt ${TUNE_BUDGET:-60} ] && budget=${TUNE_BUDGET:-60}
        [ $budget -lt 10 ] && budget=10
        order=(); [ -f $d/profile.json ] && order=(--order-by $d/profile.json)
        # the record keeps the policy it is made with (stage tune_captured replays with it); a resumed
        # tune goes on with that one
        [ -f $d/tune-policy.pt ] || cp models/checkpoint_best.pt $d/tune-policy.pt
        timeout $((budget + 90)) python3 -m chronos.cli tune $d --backend gpu --ptxas triton "${order[@]}" \
          --checkpoint $d/tune-policy.pt --store data/store/measurements.sqlite --params params.yaml \
          --budget $budget ${TUNE_EXTRA:-} --db $d/tuned.sqlite > "$LOGS/tune_$w.log" 2>&1
        echo "tune $w (budget $budget s): exit $?" | tee -a $SUMMARY
        grep -E "^tune: ([0-9]+ tuned,|tuned DB|[0-9]+ of [0-9]+ selected)" "$LOGS/tune_$w.log" | tee -a $SUMMARY ;;
      e2e)
        # the DB is not kept in git: written from the committed parts where this call did not tune
        [ -f $d/tuned.sqlite ] || python3 -m chronos.cli tune $d --merge-only --db $d/tuned.sqlite >> "$LOGS/e2e_$w.log" 2>&1
        if [ ! -f $d/tuned.sqlite ]; then echo "e2e $w: no tuned DB" | tee -a $SUMMARY; continue; fi
        if [ -n "${SKIP_DONE:-}" ] && [ -f $d/e2e.json ]; then echo "e2e $w: done before" | tee -a $SUMMARY; continue; fi
        timeout $(( $(left) - 10 )) python3 scripts/e2e.py $w --db $d/tuned.sqlite --out $d/${E2E_OUT:-e2e.json} --logs $LOGS \
          --rounds ${E2E_ROUNDS:-10} --steps ${E2E_STEPS:-3} ${E2E_EXTRA:-} > "$LOGS/e2e_$w.log" 2>&1
        echo "e2e $w: exit $?" | tee -a $SUMMARY; tail -3 "$LOGS/e2e_$w.log" | tee -a $SUMMARY ;;
    esac
    n=$((n - 1))
    save
  done
done
save
echo "== done $(date -u +%T) ($SECONDS s)" | tee -a $SUMMARY
