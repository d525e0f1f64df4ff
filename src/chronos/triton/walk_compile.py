"""The configs a walk visits, compiled on the GPU image (#28 item 4: chronos.search.knob_walk's compiler
there; needs torch and Triton, the versions that captured the kernels).

Each config is compiled from the kernel's Inductor module (walk.json's root: the module and config that
remade the committed stock PTX, scripts/make_walk_roots.py) by Inductor's own autotuner object, in a pool of
spawned processes (each keeps the modules it loaded); its PTX and launch numbers, or why none, are recorded
into walk.json before the walk times anything, so that replay walks the same configs from the manifest.
"""

from __future__ import annotations

import concurrent.futures as cf
import gzip
import json
import multiprocessing
import os
import re
import tempfile
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.search.knob_walk import Point
from chronos.triton.walk_manifest import ManifestCompiler

_TUNERS: dict = {}


def init_worker(ptxas: str | None, scratch: str) -> None:
    if ptxas:
        os.environ["TRITON_PTXAS_PATH"] = ptxas
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, f"compile-{os.getpid()}")


def compile_point(module: str, name: str, root: dict, launches: dict, point: dict) -> dict:
    """One config of the kernel `name` defined in `module` (a file), moved from the stock config
    (root["stock"]): build_move's record of it (PTX text, launch numbers and grids, or why not)."""
    from chronos.triton.inductor_source import build_move, error_text, load_tuner, with_config

    try:
        if (module, name) not in _TUNERS:
            _TUNERS[(module, name)] = load_tuner(Path(module), name)
        tuner = _TUNERS[(module, name)]
        stock = root["stock"]
        cfg = with_config(tuner.configs[0], stock["kwargs"], stock["num_warps"], stock["num_stages"])
    except Exception as e:  # noqa: BLE001 - a module that does not load is said for the config
        return {"error": f"loading its module: {error_text(e)}"}
    return build_move(tuner, cfg, point, root["ident"], launches, root["grid_checks"])


class TritonCompiler(ManifestCompiler):
    """ManifestCompiler that compiles the configs its manifest lacks, recording each (PTX under
    walk/<stem>/) into walk.json as it goes."""

    def __init__(self, folder: Path, jobs: int | None = None, ptxas: str | None = None):
        super().__init__(folder)
        # the ptxas the roots were remade under (its version decides the PTX `.version` Triton writes):
        # without it Triton took its own, and every config compiled to PTX no deployment makes (2026-12-06)
        ptxas = ptxas or self.manifest.get("provenance", {}).get("ptxas")
        if ptxas and not Path(ptxas).is_file():
            raise ChronosError(f"{folder / 'walk.json'}: its roots were remade under ptxas {ptxas}, not "
                               "here: compile the walk on the image that made them (make_walk_roots.py)")
        self.scratch = Path(tempfile.mkdtemp(prefix="chronos-walk-"))
        self.modules: dict[str, Path] = {}  # stock PTX -> its module here, once its stock config is remade
        self.pool = cf.ProcessPoolExecutor(jobs or os.cpu_count() or 4,
                                           mp_context=multiprocessing.get_context("spawn"),
                                           initializer=init_worker, initargs=(ptxas, str(self.scratch)))
        specs = json.loads((folder / "specs.json").read_text())
        self.launches = {}
        for s in specs:
            self.launches.setdefault(s["ptx"], {})[s["kernel"]] = (s["args"], s["grid"])

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)

    def compile(self, spec, entry: dict, points: list[Point]) -> None:
        if not points:
            return
        launches = self.launches[spec.ptx]
        root = {k: entry[k] for k in ("stock", "ident", "grid_checks")}
        module = self.modules.get(spec.ptx) or self._module(spec, entry, root, launches)
        jobs = {p.label: self.pool.submit(compile_point, str(module), entry["name"], root, launches,
                                          {"label": p.label, **p.to_json()}) for p in points}
        for label, fut in jobs.items():
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker that died is said for its config
                res = {"error": f"worker: {type(e).__name__}: {e}"}
            if "ptx_text" in res:
                rel = f"walk/{entry['stem']}/{label.replace(',', '+')}.ptx.gz"
                (self.folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (self.folder / rel).write_bytes(gzip.compress(res.pop("ptx_text").encode(), 9, mtime=0))
                res["ptx"] = rel
            entry["configs"][label] = {k: v for k, v in res.items() if k not in ("label", "kwargs")}
        (self.folder / "walk.json").write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")

    def _module(self, spec, entry: dict, root: dict, launches: dict) -> Path:
        """The kernel's module, written under the capture's file name (Triton writes it into every `.loc`
        comment of the PTX), once its stock config is seen to remake the stock PTX here: configs compiled
        where stock is not remade would never deploy."""
        module = self.scratch / entry["stem"] / source_name(read_ptx(self.folder / "specs.json", spec))
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(self.source(entry))
        got = self.pool.submit(compile_point, str(module), entry["name"], root, launches,
                               {"label": "stock", **root["stock"]}).result()
        if not got.get("same_as_stock"):
            why = got.get("error") or "another PTX"
            raise ChronosError(f"{spec.kernel}: the walk's compile of its stock config does not remake its "
                               f"stock PTX ({why}): check the ptxas and Triton this runs with against "
                               "walk.json's provenance")
        self.modules[spec.ptx] = module
        return module


def source_name(stock_ptx: str) -> str:
    """The file name of the module the stock PTX was made from (its `.file` directive), else module.py."""
    m = re.search(r'^\s*\.file\s+\d+\s+"([^"]+)"', stock_ptx, re.MULTILINE)
    return Path(m.group(1)).name if m else "module.py"


def find_root(paths: list[str], name: str, ident: str, launches: dict, recorded: dict | None) -> dict:
    """A kernel's walk root: the module (its text) and config that remake the stock PTX (identity
    `ident`), whether its reduction is persistent, and per launch whether Inductor's grid for that config
    gives the captured grid (only those launches get a grid for a moved config); or {"error": ...}."""
    from chronos.triton.inductor_source import find_stock, is_persistent, stock_grid_checks

    found, errors = find_stock(paths, name, ident, recorded)
    if found is None:
        return {"error": "no config of its Inductor source remade the stock PTX", "tried": errors[:4]}
    tuner, cfg, meta, path = found
    return {"module_text": Path(path).read_text(), "name": name, "ident": ident,
            "grid_checks": stock_grid_checks(tuner, cfg, meta, launches),
            "stock": {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps, "num_stages": cfg.num_stages},
            "persistent": is_persistent(tuner, name)}
