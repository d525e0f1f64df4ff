# The seed's 64 gemm_tile kernels (m, n, k in params.yaml), as PTX plus launch specs.
rule kernels:
    input:
        "src/chronos/stages/kernels.py",
        "src/chronos/kernels/gemm_tile.py",
    output:
        directory("data/kernels/gemm_tile"),
    params:
        tracked=tracked_params("kernels.gemm_tile"),
    shell:
        "python -m chronos.stages.kernels --params params.yaml --out data/kernels/gemm_tile"
