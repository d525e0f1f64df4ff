# Policy stages: behaviour cloning of the greedy demonstrations (the DA-GRPO warm start), DA-GRPO with rewards
# from the measurement backend (replay: the atlas), the policy's predictions for every gemm_tile kernel, and
# its zero-shot evaluation on the Triton suite.
#
# bc and grpo take their inputs as ancient(): a fresh clone's checkout times never rerun them, only a missing
# output, `snakemake -R bc grpo` or DVC (which compares contents). Training is CPU arithmetic whose last bits
# depend on the processor (MKL and ATen pick code paths per CPU; on an AMD EPYC VM GRPO diverged at epoch
# 274), so each stage replays its record (data/recorded_training/<stage>, chronos.rl.recorded) while the
# params and input files it trains from are those the record was trained from, and trains otherwise.
rule bc:
    input:
        ancient("data/demos/trajectories.jsonl"),
        ancient("data/recorded_training/bc"),
        ancient("src/chronos/actions.py"),
        ancient("src/chronos/config"),
        ancient("src/chronos/errors.py"),
        ancient("src/chronos/features"),
        ancient("src/chronos/files.py"),
        ancient("src/chronos/gpu.py"),
        ancient("src/chronos/ptx"),
        ancient("src/chronos/rl"),
        ancient("src/chronos/stages/__init__.py"),
        ancient("src/chronos/stages/bc.py"),
        ancient("src/chronos/stages/common.py"),
        ancient("src/chronos/toolchain.py"),
        ancient("src/chronos/transforms"),
    output:
        "models/bc.pt",
        "reports/bc_stats.json",
    params:
        tracked=tracked_params("actions", "bc", "split"),
    shell:
        "python -m chronos.stages.bc --params params.yaml --demos data/demos/trajectories.jsonl"
        " --out models/bc.pt --stats reports/bc_stats.json"


rule predict:
    input:
        "data/kernels/gemm_tile",
        "models/checkpoint_best.pt",
        "src/chronos/actions.py",
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/features",
        "src/chronos/files.py",
        "src/chronos/gpu.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/optimize",
        "src/chronos/ptx",
        "src/chronos/rl",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/predict.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/predictions.json",
    params:
        tracked=tracked_params("actions", "predict"),
    shell:
        "python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile"
        " --checkpoint models/checkpoint_best.pt --out reports/predictions.json"


rule grpo:
    input:
        ancient("data/kernels/gemm_tile"),
        ancient("data/recorded_training/grpo"),
        ancient("data/store/measurements.sqlite"),
        ancient("data/store/atlas.sqlite"),
        ancient("models/bc.pt"),
        ancient("src/chronos/actions.py"),
        ancient("src/chronos/config"),
        ancient("src/chronos/errors.py"),
        ancient("src/chronos/features"),
        ancient("src/chronos/files.py"),
        ancient("src/chronos/gpu.py"),
        ancient("src/chronos/kernels"),
        ancient("src/chronos/measure"),
        ancient("src/chronos/progress.py"),
        ancient("src/chronos/ptx"),
        ancient("src/chronos/rl"),
        ancient("src/chronos/sass.py"),
        ancient("src/chronos/search"),
        ancient("src/chronos/stages/__init__.py"),
        ancient("src/chronos/stages/common.py"),
        ancient("src/chronos/stages/grpo.py"),
        ancient("src/chronos/stages/measuring.py"),
        ancient("src/chronos/toolchain.py"),
        ancient("src/chronos/transforms"),
    output:
        "models/checkpoint_best.pt",
        "models/checkpoint_latest.pt",
        "reports/training_result.json",
        "reports/grpo_curves.csv",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("actions", "grpo", "split", "measure"),
    shell:
        "python -m chronos.stages.grpo --params params.yaml --kernels data/kernels/gemm_tile"
        " --store data/store/measurements.sqlite --bc models/bc.pt --out-best models/checkpoint_best.pt"
        " --out-latest models/checkpoint_latest.pt --result reports/training_result.json"
        " --curves reports/grpo_curves.csv"


rule evaluate:
    input:
        "data/kernels/probes",
        "data/kernels/triton",
        "data/kernels/triton_llm",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "models/checkpoint_best.pt",
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
        "src/chronos/rl",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/evaluate.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/measure_triton_results.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("actions", "predict", "search.greedy", "search.triton", "measure", "timing"),
    shell:
        "python -m chronos.stages.evaluate --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt"
        " --out reports/measure_triton_results.json"
