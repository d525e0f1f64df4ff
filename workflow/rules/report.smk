# The captured workloads' tune (issue #13) again: on a GPU measured, else replayed from the store and checked
# against the H200's record (tune-parts/).
rule tune_captured:
    input:
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/optimize",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/report",
        "src/chronos/rl",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/stages/tune_captured.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/tune_captured.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "predict", "search.greedy", "timing"),
    shell:
        "python -m chronos.stages.tune_captured --params params.yaml --captured data/kernels/captured"
        " --store data/store/measurements.sqlite --out reports/tune_captured.json"


# Where real kernels have headroom (issue #14): greedy in time over the v2 space; on a GPU measured (and
# recorded in data/headroom/), else replayed from the store and checked against that record.
rule headroom:
    input:
        "data/headroom",
        "data/kernels/captured",
        "data/kernels/triton_llm",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/headroom.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/stages/timed_sections.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/headroom.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.headroom", "timing"),
    shell:
        "python -m chronos.stages.headroom --params params.yaml --kernels data/kernels --parts data/headroom"
        " --store data/store/measurements.sqlite --out reports/headroom.json --backend replay"


# Stage headroom's step 0 on more kernels (issue #14): every single v2 action beside the baseline in one
# comparison; on a GPU measured (data/census/), else replayed from the store and checked against that record.
rule census:
    input:
        "data/census",
        "data/kernels/captured",
        "data/kernels/triton_llm",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/census.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/stages/timed_sections.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/census.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.census", "timing"),
    shell:
        "python -m chronos.stages.census --params params.yaml --kernels data/kernels --parts data/census"
        " --store data/store/measurements.sqlite --out reports/census.json --backend replay"


# The census of action space v3's compile knobs (issue #28): every single num_warps / num_stages / maxnreg value
# beside stock, recompiled from the kernel's TTIR (data/kernels/captured/<w>/knobs.json); on a GPU measured
# (data/knob_census/), else replayed from the store and checked against that record.
rule knob_census:
    input:
        "data/knob_census",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_census.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_census.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_census --params params.yaml --kernels data/kernels --parts data/knob_census"
        " --store data/store/measurements.sqlite --out reports/knob_census.json --backend replay"


# The joint space's first step (issue #28): the v2 PTX actions on top of each kernel's knob winner (or stock),
# beside stock in one comparison; on a GPU measured (data/knob_ptx/), else replayed from the store.
rule knob_ptx:
    input:
        "data/knob_ptx",
        "data/knob_census",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_ptx.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_ptx.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_ptx --params params.yaml --kernels data/kernels"
        " --knob-parts data/knob_census --parts data/knob_ptx --store data/store/measurements.sqlite"
        " --out reports/knob_ptx.json --backend replay"


# The joint space's second step (issue #28): block sizes of each Inductor kernel beside the first step's winner,
# PTX actions on top of a block winner; on a GPU measured (data/knob_blocks/), else replayed from the store.
rule knob_blocks:
    input:
        "data/knob_blocks",
        "data/knob_ptx",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_blocks.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_blocks.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_blocks --params params.yaml --kernels data/kernels"
        " --joint-parts data/knob_ptx --parts data/knob_blocks --store data/store/measurements.sqlite"
        " --out reports/knob_blocks.json --backend replay"


# Seeded random search in time (issue #14), the comparator for headroom's greedy: random v2 sets beside the
# baseline in one comparison; on a GPU measured (data/random_time/), else replayed from the store.
# Inductor's own tuners per kernel (issue #28 item 5): the config max-autotune and coordinate descent keep
# for each stock kernel (scripts/make_anchor_variants.py) beside stock and Chronos v3's winner, v2 PTX on
# top of coordinate descent's; on a GPU measured (data/knob_anchors/), else replayed from the store.
rule knob_anchors:
    input:
        "data/knob_anchors",
        "data/knob_blocks",
        "data/knob_ptx",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_anchors.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_anchors.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_anchors --params params.yaml --kernels data/kernels"
        " --joint-parts data/knob_ptx --blocks-parts data/knob_blocks --parts data/knob_anchors"
        " --store data/store/measurements.sqlite --out reports/knob_anchors.json --backend replay"


# The walk over each Inductor kernel's config (issue #28 item 4): several moves of block sizes and num_warps,
# each one comparison, from stock's config (bit-exact) and from coordinate descent's, PTX on top, the ends
# chosen beside the earlier v3 winner; on a GPU measured (data/knob_walk/, configs compiled into
# data/kernels/captured/<w>/walk.json), else replayed from the store.
rule knob_walk:
    input:
        "data/knob_walk",
        "data/knob_anchors",
        "data/knob_blocks",
        "data/knob_ptx",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/knob_walk.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_walk.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_walk --params params.yaml --kernels data/kernels"
        " --joint-parts data/knob_ptx --blocks-parts data/knob_blocks --parts data/knob_walk"
        " --store data/store/measurements.sqlite --out reports/knob_walk.json --backend replay"


# The one variant deployed for the shapes of one stock PTX whose winners differ, judged again at each shape
# beside stock and the shape's own winner (#28); on a GPU measured (data/knob_shapes/), else replayed.
rule knob_shapes:
    input:
        "data/knob_shapes",
        "data/knob_walk",
        "data/knob_blocks",
        "data/knob_ptx",
        "data/kernels/captured",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/knob_sections.py",
        "src/chronos/stages/knob_shapes.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/triton",
        "src/chronos/tuning",
    output:
        "reports/knob_shapes.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.knob_census", "timing"),
    shell:
        "python -m chronos.stages.knob_shapes --params params.yaml --kernels data/kernels"
        " --joint-parts data/knob_ptx --blocks-parts data/knob_blocks --walk-parts data/knob_walk"
        " --parts data/knob_shapes"
        " --store data/store/measurements.sqlite --out reports/knob_shapes.json --backend replay"


# Seeded random search in time (issue #14), the comparator for headroom's greedy: random v2 sets beside the
# baseline in one comparison; on a GPU measured (data/random_time/), else replayed from the store.
rule random_time:
    input:
        "data/random_time",
        "data/kernels/captured",
        "data/kernels/triton_llm",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/stages/random_time.py",
        "src/chronos/stages/timed_sections.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/random_time.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.random_time", "timing"),
    shell:
        "python -m chronos.stages.random_time --params params.yaml --kernels data/kernels --parts data/random_time"
        " --store data/store/measurements.sqlite --out reports/random_time.json --backend replay"


# Leave-one-workload-out over the census (issue #14): a one-step v2 policy (BC, then GRPO on the census's
# measured log time ratios) against the best fixed action and the oracle, on each held-out family; CPU only.
rule heldout:
    input:
        "data/census",
        "data/headroom",
        "data/heldout/record.json",
        "data/kernels/captured",
        "data/kernels/triton_llm",
        "data/recorded_training/heldout",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/rl",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/heldout.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/heldout.json",
        "reports/heldout_curves.csv",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("heldout", "search.census", "search.greedy", "search.headroom", "measure",
                               "timing"),
    shell:
        "python -m chronos.stages.heldout --params params.yaml --kernels data/kernels --census data/census"
        " --headroom data/headroom --store data/store/measurements.sqlite --backend replay --out reports/heldout.json"
        " --curves reports/heldout_curves.csv --record data/heldout/record.json"


# The real-workload corpus (issue #13) summarised from its committed H200 records; nothing is measured.
rule captured:
    input:
        "data/kernels/captured",
        "data/library",
        "reports/tune_captured.json",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/files.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/ptx",
        "src/chronos/report",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/captured.py",
        "src/chronos/stages/common.py",
        "src/chronos/tuning",
    output:
        "reports/captured.json",
    shell:
        "python -m chronos.stages.captured --params params.yaml --captured data/kernels/captured "
        "--library data/library --tune reports/tune_captured.json --out reports/captured.json"


# Tables, figures, reports/README.md and reports/metrics.json (for `dvc exp show`) from the stages' outputs.
rule report:
    input:
        "reports/baseline.json",
        "reports/greedy_results.json",
        "reports/random_results.json",
        "reports/bc_stats.json",
        "reports/predictions.json",
        "reports/oracle.json",
        "reports/training_result.json",
        "reports/grpo_curves.csv",
        "reports/triton_search.json",
        "reports/measure_triton_results.json",
        "reports/confirm.json",
        "reports/aa.json",
        "reports/captured.json",
        "reports/headroom.json",
        "reports/census.json",
        "reports/random_time.json",
        "reports/heldout.json",
        "reports/heldout_curves.csv",
        "reports/knob_census.json",
        "reports/knob_ptx.json",
        "reports/knob_blocks.json",
        "reports/knob_anchors.json",
        "reports/knob_shapes.json",
        "reports/knob_walk.json",
        "reports/reliability.json",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/files.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/ptx",
        "src/chronos/report",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/report.py",
        "src/chronos/tuning",
    output:
        "reports/search_gemm_tile.csv",
        "reports/figures/search_gemm_tile.png",
        "reports/figures/bc_curves.png",
        "reports/figures/grpo_curves.png",
        "reports/figures/triton_results.png",
        "reports/figures/heldout_curves.png",
        "reports/metrics.json",
        "reports/README.md",
    shell:
        "python -m chronos.stages.report --params params.yaml --reports reports"
