# Measurement stages. They measure on a GPU (measure.backend: gpu/auto) or replay from the committed store
# data/store/measurements.sqlite (the store is an input: a GPU run appends to it, a replay only reads it).
rule baseline:
    input:
        "data/kernels/gemm_tile",
        "data/kernels/triton",
        "data/store/measurements.sqlite",
        "src/chronos/stages/baseline.py",
        "src/chronos/measure",
    output:
        "reports/baseline.json",
    params:
        tracked=tracked_params("measure"),
    shell:
        "python -m chronos.stages.baseline --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --out reports/baseline.json"


rule greedy:
    input:
        "data/kernels/gemm_tile",
        "data/store/measurements.sqlite",
        "src/chronos/stages/greedy.py",
        "src/chronos/search",
        "src/chronos/transforms",
        "src/chronos/measure",
    output:
        "data/demos/trajectories.jsonl",
        "reports/greedy_results.json",
    params:
        tracked=tracked_params("measure", "search.greedy"),
    shell:
        "python -m chronos.stages.greedy --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --demos data/demos/trajectories.jsonl"
        " --out reports/greedy_results.json"
