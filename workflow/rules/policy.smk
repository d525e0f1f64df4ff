# Policy stages: behaviour cloning of the greedy demonstrations (the DA-GRPO warm start), and the policy's
# predictions for every gemm_tile kernel. GRPO joins once the atlas makes replay complete (see README).
rule bc:
    input:
        "data/demos/trajectories.jsonl",
        "src/chronos/stages/bc.py",
        "src/chronos/rl/bc.py",
        "src/chronos/rl/policy.py",
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
        "models/bc.pt",
        "src/chronos/stages/predict.py",
        "src/chronos/features.py",
        "src/chronos/inference.py",
        "src/chronos/actions.py",
        "src/chronos/rl/policy.py",
        "src/chronos/ptx",
        "src/chronos/transforms",
    output:
        "reports/predictions.json",
    params:
        tracked=tracked_params("predict"),
    shell:
        "python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile"
        " --checkpoint models/bc.pt --out reports/predictions.json"
