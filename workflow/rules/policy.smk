# Policy stages. Until behaviour cloning and GRPO exist, `predict` runs on an UNTRAINED seeded checkpoint.
rule init_policy:
    input:
        "src/chronos/stages/init_policy.py",
        "src/chronos/rl/policy.py",
    output:
        "models/untrained.pt",
    params:
        tracked=tracked_params("policy"),
    shell:
        "python -m chronos.stages.init_policy --params params.yaml --out models/untrained.pt"


rule predict:
    input:
        "data/kernels/gemm_tile",
        "models/untrained.pt",
        "src/chronos/stages/predict.py",
        "src/chronos/features.py",
        "src/chronos/inference.py",
        "src/chronos/actions.py",
        "src/chronos/rl/policy.py",
        "src/chronos/ptx/parser.py",
        "src/chronos/ptx/lexer.py",
        "src/chronos/ptx/ir.py",
        "src/chronos/ptx/analysis.py",
        "src/chronos/ptx/printer.py",
        "src/chronos/transforms/__init__.py",
        "src/chronos/transforms/base.py",
        "src/chronos/transforms/alignment.py",
        "src/chronos/transforms/vectorize.py",
        "src/chronos/transforms/cache_hints.py",
        "src/chronos/transforms/register_budget.py",
        "src/chronos/transforms/reorder.py",
        "src/chronos/transforms/prefetch.py",
    output:
        "reports/predictions.json",
    params:
        tracked=tracked_params("predict"),
    shell:
        "python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile"
        " --checkpoint models/untrained.pt --out reports/predictions.json"
