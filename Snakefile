# Chronos pipeline. Front door: `snakemake --cores all`. dvc.yaml declares the same stages (same commands,
# deps, outs and params); tests/test_pipeline_agreement.py keeps the two in step.
import os
import sys

configfile: "params.yaml"

# Stage commands say `python`: make it this interpreter's (the venv's) even when the venv is not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


def tracked_params(*keys):
    """{dotted key: value} from params.yaml: the same keys dvc.yaml lists, and a change reruns the rule."""
    out = {}
    for key in keys:
        value = config
        for part in key.split("."):
            value = value[part]
        out[key] = value
    return out


include: "workflow/rules/kernels.smk"
include: "workflow/rules/policy.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "data/kernels/gemm_tile",
        "models/bc.pt",
        "reports/bc_stats.json",
        "models/checkpoint_best.pt",
        "models/checkpoint_latest.pt",
        "reports/training_result.json",
        "reports/grpo_curves.csv",
        "reports/oracle.json",
        "reports/random_results.json",
        "reports/triton_search.json",
        "reports/measure_triton_results.json",
        "reports/confirm.json",
        "reports/aa.json",
        "reports/tune_captured.json",
        "reports/captured.json",
        "reports/headroom.json",
        "reports/census.json",
        "reports/knob_census.json",
        "reports/knob_ptx.json",
        "reports/knob_blocks.json",
        "reports/knob_anchors.json",
        "reports/knob_walk.json",
        "reports/knob_shapes.json",
        "reports/random_time.json",
        "reports/heldout.json",
        "reports/heldout_curves.csv",
        "reports/predictions.json",
        "reports/baseline.json",
        GREEDY_PARTS,
        "data/demos/trajectories.jsonl",
        "reports/greedy_results.json",
        "reports/search_gemm_tile.csv",
        "reports/figures/search_gemm_tile.png",
        "reports/figures/bc_curves.png",
        "reports/figures/grpo_curves.png",
        "reports/figures/triton_results.png",
        "reports/figures/heldout_curves.png",
        "reports/metrics.json",
        "reports/README.md",
