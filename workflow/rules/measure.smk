# Measurement stages. They measure on a GPU (measure.backend: gpu/auto) or replay from the committed stores:
# data/store/measurements.sqlite and, for the gemm_tile kernels, data/store/atlas.sqlite (every legal action
# set, grouped by SASS and measured). Both are inputs: a GPU run appends to them, a replay only reads them.
GEMM = config["kernels"]["gemm_tile"]
GREEDY_PARTS = expand("data/search/greedy/gemm_tile_{m}_{n}_{k}.json", m=GEMM["m"], n=GEMM["n"], k=GEMM["k"])


rule baseline:
    input:
        "data/kernels/gemm_tile",
        "data/kernels/triton",
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
        "src/chronos/ptx",
        "src/chronos/sass.py",
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/baseline.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/baseline.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure"),
    shell:
        "python -m chronos.stages.baseline --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --out reports/baseline.json"


# One job per kernel: `snakemake --cores all --resources gpu=2` keeps two GPUs busy, and an executor
# plugin can spread the jobs over a cluster.
rule greedy_kernel:
    input:
        "data/kernels/gemm_tile",
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
        "src/chronos/stages/greedy_kernel.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "data/search/greedy/gemm_tile_{m}_{n}_{k}.json",
    wildcard_constraints:
        m=r"\d+",
        n=r"\d+",
        k=r"\d+",
    resources:
        gpu=1,
    params:
        tracked=tracked_params("measure", "search.greedy"),
    shell:
        "python -m chronos.stages.greedy_kernel --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --kernel gemm_tile_{wildcards.m}_{wildcards.n}_{wildcards.k}"
        " --out data/search/greedy/gemm_tile_{wildcards.m}_{wildcards.n}_{wildcards.k}.json"


rule greedy:
    input:
        "data/kernels/gemm_tile",
        GREEDY_PARTS,
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
        "src/chronos/search",
        "src/chronos/stages/__init__.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/greedy.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "data/demos/trajectories.jsonl",
        "reports/greedy_results.json",
    params:
        tracked=tracked_params("search.greedy"),
    shell:
        "python -m chronos.stages.greedy --params params.yaml --kernels data/kernels --parts data/search/greedy"
        " --demos data/demos/trajectories.jsonl --out reports/greedy_results.json"


# The exhaustive oracle from the atlas (measured on the GPU by `python -m chronos.stages.atlas --backend gpu`;
# here it reads the recorded measurements).
rule atlas:
    input:
        "data/kernels/gemm_tile",
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
        "src/chronos/stages/atlas.py",
        "src/chronos/stages/common.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/oracle.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.atlas"),
    shell:
        "python -m chronos.stages.atlas --params params.yaml --kernels data/kernels"
        " --atlas data/store/atlas.sqlite --out reports/oracle.json"


rule random_search:
    input:
        "data/kernels/gemm_tile",
        "data/store/measurements.sqlite",
        "data/store/atlas.sqlite",
        "reports/greedy_results.json",
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
        "src/chronos/stages/random_search.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/random_results.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.random"),
    shell:
        "python -m chronos.stages.random_search --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --greedy reports/greedy_results.json"
        " --out reports/random_results.json"


rule search_triton:
    input:
        "data/kernels/triton",
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
        "src/chronos/stages/search_triton.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/triton_search.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.triton", "timing"),
    shell:
        "python -m chronos.stages.search_triton --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --out reports/triton_search.json"


# The A/A test of the time verdicts: every suite kernel's baseline against copies of itself (any verdict other
# than no_difference is false).
rule aa:
    input:
        "data/kernels/triton",
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
        "src/chronos/stages/aa.py",
        "src/chronos/stages/common.py",
        "src/chronos/stages/measuring.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/aa.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("measure", "search.greedy", "search.triton", "timing"),
    shell:
        "python -m chronos.stages.aa --params params.yaml --kernels data/kernels"
        " --store data/store/measurements.sqlite --out reports/aa.json"


# The contenders re-measured side by side on the GPU (`python -m chronos.stages.confirm --measure`, a device
# step like the atlas's measurement; its data file is committed): here only summarised, for any policy.
rule confirm:
    input:
        "data/confirm/gemm_tile.json",
        "data/store/atlas.sqlite",
        "reports/training_result.json",
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
        "src/chronos/stages/confirm.py",
        "src/chronos/toolchain.py",
        "src/chronos/transforms",
    output:
        "reports/confirm.json",
    resources:
        gpu=1,  # opens a measurement backend: on a GPU host it measures
    params:
        tracked=tracked_params("split", "search.greedy"),
    shell:
        "python -m chronos.stages.confirm --params params.yaml --data data/confirm/gemm_tile.json"
        " --training reports/training_result.json --out reports/confirm.json"
