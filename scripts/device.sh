#!/usr/bin/env bash
# The one entry for GPU work: on a device call (or any GPU host), run GPU targets and bring back what they
# wrote. Every measuring stage of the pipeline is a Snakemake rule with `resources: gpu=1`, so on a GPU host
# `snakemake --cores all --resources gpu=1 --forcerun R --allowed-rules R R` measures it; this script is that
# command plus the device's setup (the carried wheels) and the packing of results.
#
#   bash scripts/device.sh TARGET...
#     gpu_tests          the GPU tests (pytest -m gpu: tests/measure, tests/triton)
#     checks             the device checks: side-by-side smoke, the Triton stage hook, the optimize path
#     captured           capture -> tune -> e2e of $WORKLOADS (workflow/captured/Snakefile; default: the
#                        registry's, chronos.config.workloads); TUNE_BUDGET: tune seconds per workload
#     heldout_picks      the picks stage heldout made on a CPU, timed again side by side on this GPU
#     blocks             each captured Inductor kernel's block-size variants and templates' row blocks
#                        (scripts/make_block_variants.py; $WORKLOADS, default all)
#     knob_variants      each captured kernel's compile-knob variants from its TTIR (scripts/make_knob_variants.py;
#                        $WORKLOADS, default the registry's; a pending one's too, which search.knob_census may name)
#     knob_census        stage knob_census measured (kernels of the selection with no part yet), into the store
#     knob_ptx           stage knob_ptx measured: v2 PTX actions on each knob winner (alike)
#     knob_blocks        stage knob_blocks measured: block variants beside knob_ptx's winners, into the store
#     pending            scripts/workloads.py's PENDING workloads ($WORKLOADS, default both): capture, profile,
#                        tune (TUNE_BUDGET, default 60 s each) -> data/kernels/captured/<w>
#     anchors            Inductor's max-autotune/coordesc configs per kernel (make_anchor_variants; $WORKLOADS;
#                        ANCHOR_LIMIT: kernels tuned per workload, most GPU time first)
#     knob_anchors       stage knob_anchors measured: the anchors beside stock and Chronos v3, into the store
#     walk_roots         each selected Inductor kernel's module and stock config (make_walk_roots; $WORKLOADS)
#     knob_walk          stage knob_walk measured: walks over each kernel's config, compiled here (--compile;
#                        REMEASURE=1: the recorded kernels timed again, parts kept: a repeat)
#     knob_shapes        stage knob_shapes measured: the one variant shared by the shapes of a stock PTX whose
#                        winners differ, judged again at each shape beside stock and its own winner
#     e2e_v3             per workload of $WORKLOADS (default flex): Chronos v3's DB from the knob_ptx,
#                        knob_blocks, knob_walk (and knob_shapes) parts, then scripts/e2e_one_process.py with
#                        it (ROUNDS, default 30; ANCHORS="max_autotune coordesc": Inductor's tuners beside it,
#                        step by step;
#                        ANCHOR_DRAWS=N: each tuner compiled N times, caches of its own each: N draws of it;
#                        GRAPHS=1: each set's CUDA graph of every phase timed, not Python steps;
#                        LEAVE_OUT="ACTION|GROUP ...": a second DB less the winners using them, timed beside
#                        as the set `without_<ACTION+GROUP...>`, the name saying what it left out)
#                        -> data/kernels/captured/<w>/e2e-one-process.json
#     PATH.py            a research or benchmark script (experiments/..., benchmarks/...) with $ARGS
#     RULE               a pipeline rule that measures (baseline, aa, greedy_kernel, random_search, atlas,
#                        search_triton, confirm, grpo, evaluate, tune_captured, headroom, census, random_time,
#                        heldout), run alone on this GPU against the store and params.yaml as they are
#     FILE               an output of the pipeline (e.g. data/search/greedy/gemm_tile_4_6_4.json: one job
#                        of a rule with wildcards), its one job run on this GPU
#
# Env: OUT (default /tmp/out) gets logs/ (provenance, one log per target, a summary line each) and
# result.tgz (split into result.tgz.NN pieces of 15 MiB when larger): every file under data/ reports/ models/
# that a target wrote, refreshed after each target (a target cut off by its LIMIT, default 540 s, keeps what
# it wrote). On the device tool, carry .whl (pycuda), .whl_smk (snakemake for cp312, without pulp: the greedy
# scheduler), .whl_models (transformers, for captured) and .device; the committed stores are too large to
# travel as they are, so first, here:
#   bash scripts/device.sh --pack-stores     # data/store/*.sqlite -> .device/stores.tgz (about 21 MiB)
# then move data/store/*.sqlite aside for the call; on the device this script unpacks them. The command:
#   bash scripts/device.sh gpu_tests headroom
# Several runs in one call may share an OUT: each packs what the earlier ones wrote too. The whole
# transformers wheel (12 MB) pushes a call past the device's 64 MiB: carry the one scripts/prune_wheel.py makes,
# holding only its models/auto, llama, gpt2 and bert folders. On a branch for the call, cut the captures'
# tune parts with scripts/slim_tune_parts.py (it checks the selection's kernel times stay the same).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; LIMIT=${LIMIT:-540}; LOGS=$OUT/logs; mkdir -p "$LOGS"
[[ $# -gt 0 ]] || { sed -n '2,/^set -uo/{/^set -uo/d;p}' "$0"; exit 2; }
if [[ $1 == --pack-stores ]]; then
  mkdir -p .device && tar czf .device/stores.tgz data/store/measurements.sqlite data/store/atlas.sqlite
  ls -la .device/stores.tgz; exit
fi
if [[ ! -f data/store/measurements.sqlite && -f .device/stores.tgz ]]; then tar xzf .device/stores.tgz; fi

wheels=$(ls .whl/*.whl .whl_smk/*.whl .whl_models/*.whl 2>/dev/null)
if [[ -n $wheels ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site $wheels || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1 CI=true PATH=$PATH:/usr/local/cuda/bin
if [[ -x /usr/local/cuda/bin/ptxas ]]; then export CHRONOS_PTXAS=${CHRONOS_PTXAS:-/usr/local/cuda/bin/ptxas}; fi

{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv; nproc
  ${CHRONOS_PTXAS:-ptxas} --version | tail -2
  python3 -c 'import sys, sqlite3, torch, triton; print("python", sys.version.split()[0], "sqlite", sqlite3.sqlite_version, "torch", torch.__version__, "triton", triton.__version__)'
  python3 -c 'import pycuda, snakemake; print("pycuda", pycuda.VERSION_TEXT, "snakemake", snakemake.__version__)'
  echo "targets: $*"; } > "$LOGS/provenance.txt" 2>&1

SMK=(python3 -m snakemake --cores all --resources gpu=1 --scheduler greedy --nolock --quiet)
# A copied tree has arbitrary mtimes, from which Snakemake would rerun upstream stages: mark the committed
# outputs up to date first, so that a target runs its own job alone.
if python3 -c 'import snakemake' 2>/dev/null; then
  "${SMK[@]}" --touch > "$LOGS/touch.log" 2>&1 || echo "snakemake --touch failed: $LOGS/touch.log"
else  # the knob_*, e2e_v3 and script targets run without it; RULE and FILE targets need .whl_smk carried
  echo "snakemake not importable (carry .whl_smk): outputs not touched, RULE and FILE targets cannot run"
fi
STAMP=$(mktemp); touch "$STAMP"; sleep 1  # files newer than this come back

pack() {  # what the targets wrote so far, in one archive (the device brings back few files)
  # a target cut off by its LIMIT leaves its store's rows in the -wal file, which is not packed: fold them
  # into the store first (2026-12-07: a walk cut off so came back with its parts but none of its comparisons)
  local wal; for wal in $(find data -name '*.sqlite-wal' -newer "$STAMP"); do
    python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' \
      "${wal%-wal}" || echo "could not fold $wal into its store"
  done
  # an earlier run of this script with the same OUT wrote files too: they stay in (2026-12-07: a second run
  # in one call packed only its own, and the first's e2e result was lost)
  { cat "$LOGS/written.txt" 2>/dev/null
    find data reports models -type f -newer "$STAMP" ! -path '*/__pycache__/*' ! -name '*.pyc' \
      ! -name '*-wal' ! -name '*-shm'; } | sort -u | while read -r f; do [[ -f $f ]] && echo "$f"; done \
    > "$LOGS/written.new"
  mv "$LOGS/written.new" "$LOGS/written.txt"
  rm -f "$OUT"/result.tgz*
  tar czf "$OUT/result.tgz" -T "$LOGS/written.txt" -C "$OUT" logs
  if [[ $(stat -c %s "$OUT/result.tgz") -gt 15728640 ]]; then  # the device returns files of 16 MiB at most
    split -b 15M -d "$OUT/result.tgz" "$OUT/result.tgz." && rm "$OUT/result.tgz"
  fi
}

run_target() {
  local t=$1
  case $t in
    gpu_tests) python3 -m pytest -q -m gpu tests/measure tests/triton -p no:cacheprovider ;;
    checks)
      python3 scripts/gpu_compare_smoke.py --store /tmp/smoke.sqlite &&
        python3 scripts/gpu_check_triton_hook.py --out /tmp/hook &&
        python3 scripts/gpu_check_optimize.py --store /tmp/optimize.sqlite --n 2 --beam 4 ;;
    captured)
      local w; w=$(python3 -c "import sys; from chronos.config.workloads import NAMES, workload
print(','.join(workload(n).name for n in (sys.argv[1].split() or NAMES)))" "${WORKLOADS:-}") || return 2
      "${SMK[@]}" -s workflow/captured/Snakefile --config "workloads=[$w]" \
        ${TUNE_BUDGET:+budget=$TUNE_BUDGET} python=python3 ;;
    heldout_picks)
      python3 -m chronos.stages.heldout --params params.yaml --picks reports/heldout.json --backend gpu \
        --store data/store/measurements.sqlite --out "$LOGS/heldout_gpu.json" ;;
    blocks) python3 scripts/make_block_variants.py --out . ${WORKLOADS:+--workloads $WORKLOADS} ;;
    knob_census|knob_ptx|knob_blocks|knob_walk|knob_shapes)  # budget: KNOB_BUDGET_<target>, else KNOB_BUDGET,
      # else params
      local b=KNOB_BUDGET_$t; b=${!b:-${KNOB_BUDGET:-}}
      python3 -m "chronos.stages.$t" --params params.yaml --backend gpu --parts "data/$t" \
        --store data/store/measurements.sqlite --out "reports/$t.json" ${b:+--budget $b} \
        $([[ $t == knob_walk ]] && echo --compile) ${REMEASURE:+--remeasure} ;;
    walk_roots) python3 scripts/make_walk_roots.py --out . ${WORKLOADS:+--workloads $WORKLOADS} ;;
    pending)  # scripts/workloads.py's PENDING workloads: captured (inputs over 1 MiB drawn from their
      # recorded distribution, so that the capture comes back), profiled, tuned with the seed's policy
      local w; for w in ${WORKLOADS:-flex_decode_long attorch_lm}; do
        local d=data/kernels/captured/$w
        python3 -m chronos.cli capture --out "$d" --workload "$w" --compact --force --tensor-cap 1048576 \
          --total-cap 33554432 -- python3 scripts/workloads.py "$w" --steps 2 --profile-out "$d/profile.json" &&
          cp -n models/checkpoint_best.pt "$d/tune-policy.pt" &&  # the record keeps its policy (tune_captured)
          python3 -m chronos.cli tune "$d" --backend gpu --ptxas triton --order-by "$d/profile.json" \
            --checkpoint "$d/tune-policy.pt" --budget "${TUNE_BUDGET:-60}" --db "$d/tuned.sqlite" \
            --store data/store/measurements.sqlite --params params.yaml || return 1
      done ;;
    knob_variants) python3 scripts/make_knob_variants.py --out . ${WORKLOADS:+--workloads $WORKLOADS} ;;
    anchors) python3 scripts/make_anchor_variants.py --out . ${WORKLOADS:+--workloads $WORKLOADS} \
      ${ANCHOR_LIMIT:+--limit $ANCHOR_LIMIT} ;;
    knob_anchors)
      python3 -m chronos.stages.knob_anchors --params params.yaml --backend gpu --parts data/knob_anchors \
        --store data/store/measurements.sqlite --out reports/knob_anchors.json ${KNOB_BUDGET:+--budget $KNOB_BUDGET} ;;
    e2e_v3)
      local w; for w in ${WORKLOADS:-flex}; do
        local merge=(python3 -m chronos.cli tune "data/kernels/captured/$w" --merge-only --parts /tmp/no-tune-parts
          --configs-from "data/knob_ptx/captured/$w" "data/knob_blocks/captured/$w" "data/knob_walk/captured/$w"
          "data/knob_shapes/captured/$w")
        "${merge[@]}" --db "/tmp/v3-$w.sqlite" --full-db | grep "v3 winners" || return 1
        local also=()  # LEAVE_OUT="l2_policy_streaming ...": the DB less the winners using them, timed beside
        if [[ -n ${LEAVE_OUT:-} ]]; then
          "${merge[@]}" --db "/tmp/v3-$w-less.sqlite" --leave-out-actions $LEAVE_OUT | grep "v3 winners" || return 1
          local left=${LEAVE_OUT// /+}  # the set's name says what its DB left out (the e2e JSON's `also` key)
          also=(--also "without_$left=/tmp/v3-$w-less.sqlite")
        fi
        # a compile that misses its kernel's entry keeps its PTX (logs/missed-ptx-<w>/: diff it with the DB's root)
        CHRONOS_KEEP_MISSED_PTX="$LOGS/missed-ptx-$w" \
          python3 scripts/e2e_one_process.py "$w" --db "/tmp/v3-$w.sqlite" --rounds "${ROUNDS:-30}" \
            --round-seconds 0.3 --out "data/kernels/captured/$w/e2e-one-process.json" "${also[@]}" \
            ${ANCHORS:+--anchors $ANCHORS} ${ANCHOR_DRAWS:+--anchor-draws $ANCHOR_DRAWS} ${GRAPHS:+--graphs} \
            || return 1
      done ;;
    *.py) python3 "$t" ${ARGS:-} ;;
    */*) "${SMK[@]}" --force -- "$t" ;;  # an output file: the one job that writes it (a wildcard rule's)
    *) "${SMK[@]}" --forcerun "$t" --allowed-rules "$t" -- "$t" ;;
  esac
}

status=0
for t in "$@"; do
  t0=$SECONDS
  log=$LOGS/$(basename "$t" .py).log
  timeout "$LIMIT" bash -c "$(declare -f run_target); SMK=(${SMK[*]}); LOGS=$LOGS; run_target $t" > "$log" 2>&1
  rc=$?
  echo "$t: exit $rc after $((SECONDS - t0)) s ($(date -u +%FT%TZ))" | tee -a "$LOGS/summary.txt"
  tail -5 "$log"
  [[ $rc -eq 0 ]] || status=1
  pack
done
exit $status
