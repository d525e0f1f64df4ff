# Policy stages: behaviour cloning of the greedy demonstrations (the DA-GRPO warm start), DA-GRPO with rewards
# from the measurement backend (replay: the atlas), the policy's predictions for every gemm_tile kernel, and
# its zero-shot evaluation on the Triton suite.
rule bc:
    input:
        "data/demos/trajectories.jsonl",
        "src/chronos/actions.py",
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/features.py",
        "src/chronos/ptx",
        "src/chronos/rl",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/bc.py",
        "src/chronos/stages/common.py",
    output:
        "models/bc.pt",
        "reports/bc_stats.json",
    params:
        tracked=tracked_params("bc", "split"),
    shell:
        "python -m chronos.stages.bc --params params.yaml --demos data/demos/trajectories.jsonl"
        " --out models/bc.pt --stats reports/bc_stats.json"


rule predict:
    input:
        "data/kernels/gemm_tile",
        "models/checkpoint_best.pt",
        "src/chronos/actions.py",
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/features.py",
        "src/chronos/inference.py",
        "src/chronos/kernels",
        "src/chronos/ptx",
        "src/chronos/rl",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/predict.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/variant.py",
    output:
        "reports/predictions.json",
    params:
        tracked=tracked_params("predict"),
    shell:
        "python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile"
        " --checkpoint models/checkpoint_best.pt --out reports/predictions.json"


rule grpo:
    input:
        "data/kernels/gemm_tile",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "models/bc.pt",
        "src/chronos/actions.py",
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/features.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/progress.py",
        "src/chronos/ptx",
        "src/chronos/rl",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/grpo.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
        "src/chronos/variant.py",
    output:
        "models/checkpoint_best.pt",
        "models/checkpoint_latest.pt",
        "reports/training_result.json",
        "reports/grpo_curves.csv",
    params:
        tracked=tracked_params("grpo", "split", "measure"),
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
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/features.py",
        "src/chronos/kernels",
        "src/chronos/measure",
        "src/chronos/optimize_time.py",
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
        "src/chronos/variant.py",
    output:
        "reports/measure_triton_results.json",
    params:
        tracked=tracked_params("predict", "search.greedy", "search.triton", "measure", "timing"),
    shell:
        "python -m chronos.stages.evaluate --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt"
        " --out reports/measure_triton_results.json"
