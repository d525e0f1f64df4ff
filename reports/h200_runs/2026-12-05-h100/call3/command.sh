# call C: Inductor's anchors (max-autotune, coordesc) for flex then bert, knob_anchors, end to end flex again
WORKLOADS="flex bert" LIMIT=300 KNOB_BUDGET=60 bash scripts/device.sh anchors knob_anchors
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/e2e
for w in flex; do
  rem=$((560 - SECONDS)); [[ $rem -gt 40 ]] || break
  python3 -m chronos.cli tune data/kernels/captured/$w --merge-only --db $OUT/e2e/v3-$w.sqlite --parts /tmp/none \
    --configs-from data/knob_ptx/captured/$w data/knob_blocks/captured/$w 2>&1 | grep "v3 winners" | tee $OUT/e2e/db-$w.txt
  rem=$((560 - SECONDS))
  timeout $rem python3 scripts/e2e_one_process.py $w --db $OUT/e2e/v3-$w.sqlite --out $OUT/e2e/e2e-$w.json \
    --rounds 30 --round-seconds 0.3 > $OUT/e2e/e2e-$w.log 2>&1; echo "e2e $w exit $?"; tail -2 $OUT/e2e/e2e-$w.log
done
cp /tmp/chronos-anchors/*.log $OUT/logs/ 2>/dev/null
cd $OUT && tar czf /tmp/all.tgz . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
