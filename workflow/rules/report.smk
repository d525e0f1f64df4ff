# The real-workload corpus (issue #13) summarised from its committed H200 records; nothing is measured.
rule captured:
    input:
        "data/kernels/captured",
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/captured.py",
        "src/chronos/stages/common.py",
    output:
        "reports/captured.json",
    shell:
        "python -m chronos.stages.captured --params params.yaml --captured data/kernels/captured "
        "--out reports/captured.json"


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
        "src/chronos/config.py",
        "src/chronos/config_timing.py",
        "src/chronos/errors.py",
        "src/chronos/report",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/report.py",
    output:
        "reports/search_gemm_tile.csv",
        "reports/figures/search_gemm_tile.png",
        "reports/figures/bc_curves.png",
        "reports/figures/grpo_curves.png",
        "reports/figures/triton_results.png",
        "reports/metrics.json",
        "reports/README.md",
    shell:
        "python -m chronos.stages.report --params params.yaml --reports reports"
