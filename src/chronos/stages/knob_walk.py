"""Stage `knob_walk` (#28 item 4): per captured Inductor kernel, a walk over its config from stock's (strict:
the Chronos v3 number) and from coordinate descent's (within search.knob_census.anchor_tolerance), several
moves of block sizes and num_warps, the v2 PTX actions on top of each end, then both ends beside the earlier
v3 winner and coordinate descent's kernel, chosen and confirmed (chronos.search.knob_walk); stage
knob_census's section of that name. On the GPU image `--compile` compiles the configs the walks visit
(walk.json's roots: scripts/make_walk_roots.py); replay reads them from walk.json.

    python -m chronos.stages.knob_walk --params params.yaml --kernels data/kernels \\
        --joint-parts data/knob_ptx --blocks-parts data/knob_blocks \\
        --parts data/knob_walk --out reports/knob_walk.json [--backend gpu --compile|replay]
"""

from __future__ import annotations

import sys
from pathlib import Path

from chronos.stages import knob_sections
from chronos.triton.walk_manifest import ManifestCompiler


def walk_compiler(args, folder: Path):
    """Replay reads the walks' configs from walk.json; --compile (the GPU image, torch and Triton) compiles
    what it lacks."""
    if not args.compile:
        return ManifestCompiler(folder)
    from chronos.triton.walk_compile import TritonCompiler

    return TritonCompiler(folder)


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_walk", __doc__, argv, walk_compiler)


if __name__ == "__main__":
    sys.exit(main())
