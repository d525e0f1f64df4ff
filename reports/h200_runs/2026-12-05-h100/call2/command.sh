# call B: blocks + knob_blocks, then the v3 DB written on the device and end to end in one process
rm -rf data/knob_blocks reports/knob_blocks.json
LIMIT=230 KNOB_BUDGET=200 bash scripts/device.sh blocks knob_blocks
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/e2e
for w in flex gpt2; do
  rem=$((565 - SECONDS)); [[ $rem -gt 40 ]] || break
  python3 -m chronos.cli tune data/kernels/captured/$w --merge-only --db $OUT/e2e/v3-$w.sqlite --parts /tmp/none \
    --configs-from data/knob_ptx/captured/$w data/knob_blocks/captured/$w 2>&1 | grep "v3 winners" | tee $OUT/e2e/db-$w.txt
  rem=$((565 - SECONDS))
  timeout $rem python3 scripts/e2e_one_process.py $w --db $OUT/e2e/v3-$w.sqlite --out $OUT/e2e/e2e-$w.json \
    --rounds 20 --round-seconds 0.3 > $OUT/e2e/e2e-$w.log 2>&1; echo "e2e $w exit $?"; tail -2 $OUT/e2e/e2e-$w.log
done
cp -r /tmp/chronos-blocks/logs $OUT/blocklogs
cd $OUT && tar czf /tmp/all.tgz . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
