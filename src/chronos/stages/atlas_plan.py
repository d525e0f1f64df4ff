"""Stage `atlas_plan` (CPU, slow: about an hour on 2 cores for gemm_tile): every legal action set of each
kernel, assembled with ptxas and grouped by SASS key, into the atlas plan (see chronos.search.atlas_plan).

    python -m chronos.stages.atlas_plan --params params.yaml --kernels data/kernels \
        --out data/store/atlas.sqlite

Reads `search.atlas.families` and `measure.arch`. Resumes: kernels already in the plan are skipped. The
plan is committed beside the measurement store; the GPU stage `atlas` measures one representative per SASS
variant, and replay answers any set through it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from chronos.errors import ChronosError
from chronos.search.atlas_plan import AtlasDB, now, plan_kernels
from chronos.search.runs import kernels_of
from chronos.stages.common import command_line, run_stage
from chronos.toolchain import find_ptxas, ptxas_version


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--only", help="regex on kernel names (default: every kernel of the families)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="ptxas processes")


def _body(args, cfg) -> int:
    arch = cfg.measure.arch
    ptxas = str(find_ptxas())
    db = AtlasDB(args.out, create=True)
    try:
        meta = db.meta()
        version = ptxas_version(ptxas)
        if meta.get("ptxas", version) != version or meta.get("arch", arch) != arch:
            raise ChronosError(f"{args.out} was built with ptxas {meta.get('ptxas')} for {meta.get('arch')}; "
                               f"this is ptxas {version} for {arch}: build a new plan")
        if not meta:
            db.set_meta(ptxas=version, arch=arch, started=now(),
                        command=command_line("atlas_plan", args.argv))
        plan_kernels(db, kernels_of(args.kernels, cfg.search.atlas.families, args.only),
                     arch, args.jobs, ptxas)
        db.set_meta(finished=now())
    finally:
        db.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("atlas_plan", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
