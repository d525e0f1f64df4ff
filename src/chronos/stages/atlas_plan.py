"""Stage `atlas_plan` (CPU, slow: about an hour on 2 cores for gemm_tile): every legal action set of each
kernel, assembled with ptxas and grouped by SASS key, into the atlas plan (see chronos.search.atlas).

    python -m chronos.stages.atlas_plan --params params.yaml --kernels data/kernels --out data/store/atlas.sqlite

Reads `search.atlas.families` and `measure.arch`. Resumes: kernels already in the plan are skipped. The
plan is committed beside the measurement store; the GPU stage `atlas` measures one representative per SASS
variant, and replay answers any set through it.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import shlex
import sys
import time
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import load_module
from chronos.measure.config import sha256_text
from chronos.ptx import emit
from chronos.search.atlas import AtlasDB, build_kernel_plan, now
from chronos.stages.atlas import load_atlas_params
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of
from chronos.toolchain import find_ptxas, ptxas_version


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--only", help="regex on kernel names (default: every kernel of the families)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="ptxas processes")
    args = ap.parse_args(argv)
    try:
        families, _ = load_atlas_params(args.params)
        _, mcfg = load_measure_params(args.params)
        ptxas = str(find_ptxas())
        db = AtlasDB(args.out, create=True)
        meta = db.meta()
        version = ptxas_version(ptxas)
        if meta.get("ptxas", version) != version or meta.get("arch", mcfg.arch) != mcfg.arch:
            raise ChronosError(f"{args.out} was built with ptxas {meta.get('ptxas')} for {meta.get('arch')}; "
                               f"this is ptxas {version} for {mcfg.arch}: build a new plan")
        if not meta:
            argv_ = argv if argv is not None else sys.argv[1:]
            db.set_meta(ptxas=version, arch=mcfg.arch, started=now(),
                        command=shlex.join(["python", "-m", "chronos.stages.atlas_plan", *argv_]))
        with cf.ProcessPoolExecutor(args.jobs) as ex:
            for _, specs_json, spec in kernels_of(args.kernels, families, args.only):
                if db.has(spec.kernel):
                    continue
                t0 = time.perf_counter()
                root = load_module(specs_json, spec)
                plan = build_kernel_plan(root, mcfg.arch, ex, ptxas)
                sha = sha256_text(emit(root))
                db.add_kernel(spec.kernel, sha, plan, time.perf_counter() - t0)
                k = next(r for r in db.kernels() if r["kernel"] == spec.kernel)
                print(f"atlas_plan: {spec.kernel}: {k['sets']} sets -> {k['variants']} SASS variants, "
                      f"{k['refused']} refused by ptxas ({k['seconds']:.0f} s)", flush=True)
        db.set_meta(finished=now())
        db.close()
    except ChronosError as e:
        print(f"atlas_plan: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
