#!/usr/bin/env bash
# Device call(s) for issue 25's acceptance test on attorch (third_party/attorch). STEPS picks, in order:
#   styles   the GPU launch-style test (tests/triton/test_capture_styles.py -m gpu)
#   capture  chronos capture of experiments/attorch/workload.py into $CAP
#   recapture  the same into $RECAP; scripts/adopt_inputs.py --add-missing gives $CAP the kernels it lacks
#            (launches an older capture dropped) with their inputs, and the recapture's drop list
#   tune     chronos tune $CAP (gpu, Triton's ptxas, --budget $TUNE_BUDGET s) -> $CAP/tuned.sqlite
#   safety   experiments/attorch/deploy_safety.py: a forged DB and another driver on a warm cache deploy stock
#   runwl    the workload stock and under `chronos run --db` (one-line summary, stats JSON)
#   tests    attorch's own tests (TESTS) stock twice and under `chronos run --db $CAP/tuned.sqlite`, the three
#            runs at once (a second stock run shows which outcomes stock itself does not repeat); TESTS_EXTRA
#            (with -k TESTS_EXTRA_K) as a second set of three, under its own timeout
# Everything (the capture without inputs/caches, tune parts, DB, logs) comes back in $OUT/attorch_$TAG.tgz.
#   (on the device) STEPS="styles capture tune runwl" TAG=a bash experiments/attorch/device_run.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 CI=true PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/out}; TAG=${TAG:-a}; CAP=${CAP:-data/kernels/captured/attorch}; LOGS=$OUT/logs_$TAG
RECAP=${RECAP:-/tmp/recap_attorch}
TESTS=${TESTS:-tests/test_rms_norm_layer.py tests/test_layer_norm_layer.py tests/test_softmax_layers.py \
tests/test_glu_layer.py tests/test_cross_entropy_loss_layer.py tests/test_nll_loss_layer.py tests/test_dropout_layer.py}
mkdir -p $LOGS
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ptxas --version | tail -1;
  python3 -c 'import pycuda, triton, torch; print("pycuda", pycuda.VERSION_TEXT, "triton", triton.__version__, "torch", torch.__version__)'; } > $LOGS/provenance.txt 2>&1
pack() { tar czf $OUT/attorch_$TAG.tgz --exclude='*/inputs' --exclude='*/.triton_cache' --exclude='*/.inductor_cache' \
  --exclude='*/.bootstrap' $CAP 2>/dev/null; }
CHRONOS="python3 -m chronos.cli"
# three() SUFFIX [PYTEST ARGS]: the tests stock, stock again and under `chronos run --db` (RUNS picks), all at
# once, in the background (junit files tests_{stock,stock2,tuned}SUFFIX.xml, verbose logs beside them: a run
# cut off by its timeout leaves no junit file, its log says how far it got); TESTS_EXTRA runs as a second set
three() {
  local sfx=$1 py="python3 -m pytest -v -p no:cacheprovider --subset" t="timeout ${TEST_TIMEOUT:-240}" r; shift
  for r in ${RUNS:-stock stock2 tuned}; do
    if [ $r = tuned ]; then
      $t python3 -m chronos.cli run --db $PWD/../../$CAP/tuned.sqlite --stats $LOGS/tests_run_stats$sfx.json -- \
        $py --junitxml=$LOGS/tests_tuned$sfx.xml "$@" > $LOGS/tests_tuned$sfx.log 2>&1 &
    else
      $t $py --junitxml=$LOGS/tests_$r$sfx.xml "$@" > $LOGS/tests_$r$sfx.log 2>&1 &
    fi
  done
}
for s in ${STEPS:-}; do
  echo "== $s $(date -u +%T) ($SECONDS s)" | tee -a $LOGS/summary.txt
  case $s in
    styles) python3 -m pytest -q -m gpu tests/triton/test_capture_styles.py > $LOGS/styles.log 2>&1
      tail -3 $LOGS/styles.log | tee -a $LOGS/summary.txt ;;
    capture) $CHRONOS capture --out $CAP --workload attorch --compact -- python3 experiments/attorch/workload.py \
        > $LOGS/capture.log 2>&1; echo "capture exit $?" | tee -a $LOGS/summary.txt
      grep "^capture \|dropped\|^{" $LOGS/capture.log | tail -25 >> $LOGS/summary.txt ;;
    recapture) rm -rf $RECAP; $CHRONOS capture --out $RECAP --workload attorch --compact -- \
        python3 experiments/attorch/workload.py > $LOGS/recapture.log 2>&1; echo "recapture exit $?" | tee -a $LOGS/summary.txt
      grep "^capture \|dropped" $LOGS/recapture.log | tail -5 >> $LOGS/summary.txt
      python3 scripts/adopt_inputs.py $RECAP $CAP --add-missing --out $LOGS/adopt.json 2>&1 | tail -3 | tee -a $LOGS/summary.txt ;;
    tune) $CHRONOS tune $CAP --backend gpu --ptxas triton --budget ${TUNE_BUDGET:-200} --db $CAP/tuned.sqlite \
        --store $CAP/measurements.sqlite --checkpoint models/checkpoint_best.pt --params params.yaml \
        > $LOGS/tune.log 2>&1; echo "tune exit $?" | tee -a $LOGS/summary.txt
      tail -40 $LOGS/tune.log >> $LOGS/summary.txt
      $CHRONOS tuned show $CAP/tuned.sqlite >> $LOGS/summary.txt 2>&1 ;;
    safety) python3 experiments/attorch/deploy_safety.py $CAP/tuned.sqlite --out $LOGS/safety.json > $LOGS/safety.log 2>&1
      echo "safety exit $?" | tee -a $LOGS/summary.txt; tail -12 $LOGS/safety.log >> $LOGS/summary.txt ;;
    runwl) python3 experiments/attorch/workload.py > $LOGS/wl_stock.log 2>&1; echo "stock exit $?" >> $LOGS/summary.txt
      $CHRONOS run --db $CAP/tuned.sqlite --reasons --stats $LOGS/run_stats.json -- python3 experiments/attorch/workload.py \
        > $LOGS/wl_tuned.log 2>&1; echo "tuned exit $?" >> $LOGS/summary.txt
      grep "chronos run" $LOGS/wl_tuned.log >> $LOGS/summary.txt
      $CHRONOS run --db $CAP/tuned.sqlite --stats $LOGS/run_stats_warm.json -- python3 experiments/attorch/workload.py \
        > $LOGS/wl_tuned_warm.log 2>&1; grep "chronos run" $LOGS/wl_tuned_warm.log >> $LOGS/summary.txt ;;
    tests) (cd third_party/attorch
       three "" $TESTS
       [ -n "${TESTS_EXTRA:-}" ] && three .extra -k "${TESTS_EXTRA_K:-}" $TESTS_EXTRA
       wait)
      for f in $LOGS/tests_*.log; do echo "$(basename $f): $(grep -c ' PASSED' $f) passed, $(grep -c ' FAILED' $f) failed; $(tail -n 1 $f | cut -c1-150)"; done >> $LOGS/summary.txt
      grep -h "chronos run" $LOGS/tests_tuned*.log >> $LOGS/summary.txt ;;
  esac
  pack
done
cp $LOGS/summary.txt $OUT/summary_$TAG.txt
tar czf $OUT/logs_$TAG.tgz -C $OUT logs_$TAG && rm -rf $LOGS
