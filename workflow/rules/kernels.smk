# The seed's 64 gemm_tile kernels (m, n, k in params.yaml), as PTX plus launch specs.
rule kernels:
    input:
        "src/chronos/config",
        "src/chronos/errors.py",
        "src/chronos/files.py",
        "src/chronos/kernels",
        "src/chronos/ptx",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/kernels.py",
    output:
        directory("data/kernels/gemm_tile"),
    params:
        tracked=tracked_params("kernels.gemm_tile"),
    shell:
        "python -m chronos.stages.kernels --params params.yaml --out data/kernels/gemm_tile"
