# Tables, figures, reports/README.md and reports/metrics.json (for `dvc exp show`) from the stages' outputs
# and the recorded random-search results (reports/random_results.json, a partial H200 run for now).
rule report:
    input:
        "reports/baseline.json",
        "reports/greedy_results.json",
        "reports/random_results.json",
        "reports/bc_stats.json",
        "reports/predictions.json",
        "src/chronos/stages/report.py",
        "src/chronos/report",
    output:
        "reports/search_gemm_tile.csv",
        "reports/figures/search_gemm_tile.png",
        "reports/figures/bc_curves.png",
        "reports/metrics.json",
        "reports/README.md",
    shell:
        "python -m chronos.stages.report --params params.yaml --reports reports"
