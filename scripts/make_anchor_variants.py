"""Build the Inductor anchors of the captured kernels (#28 item 5), on the GPU image (torch 2.11, Triton 3.6):
per kernel, the config that Inductor's own tuners choose for the same source, compiled as a variant that a
side-by-side comparison can time beside stock and Chronos's winners.

    PYTHONUNBUFFERED=1 python3 scripts/make_anchor_variants.py --out . [--workloads llama] [--modes coordesc]

Per workload and mode it runs the workload once under `chronos capture` with that tuner on
(max_autotune: TORCHINDUCTOR_MAX_AUTOTUNE=1; coordesc: that and TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1),
one run at a time (autotuning times candidates on the GPU: a run beside it would bias its choices). The
capture records, per launch, the config that ran and the kernel's source (chronos.triton.capture_source).
For every committed kernel with knob variants, the anchor run's module of the same function must remake
the committed stock PTX with the stock config (chronos.triton.inductor_source: the same source); then
the anchor's config is compiled, its grid evaluated for each committed launch. Kernels the anchor run
does not launch (max-autotune replaces cuBLAS calls by its own GEMM templates, which have no stock
counterpart here) are left out, with why. Writes data/kernels/captured/<w>/anchors.json and
.../anchors/<stem>/<mode>.ptx.gz.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from make_block_variants import recorded_config
from make_knob_variants import gz, inductor_ptxas

from chronos.config.workloads import NAMES
from chronos.kernels.spec import read_ptx_file
from chronos.triton.inductor_source import build_kernel, error_text
from chronos.triton.tuned_db import ptx_identity_sha256

MODES = {"max_autotune": {"TORCHINDUCTOR_MAX_AUTOTUNE": "1"},
         "coordesc": {"TORCHINDUCTOR_MAX_AUTOTUNE": "1", "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING": "1"}}


def capture_run(w: str, mode: str, scratch: Path) -> tuple[int, Path]:
    out = scratch / f"{w}-{mode}"
    env = {**os.environ, **MODES[mode], "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "chronos.cli", "capture", "--out", str(out), "--force", "--allow-partial",
           "--", sys.executable, str(ROOT / "scripts/workloads.py"), w, "--steps", "1"]
    with open(scratch / f"capture-{w}-{mode}.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, check=False)
    return rc.returncode, out


def anchor_configs(capture: Path) -> dict[str, dict]:
    """function -> {"module": path, "configs": distinct configs it ran with} from a capture's records."""
    out: dict[str, dict] = {}
    for path in sorted((capture / "launches").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("source") != "inductor" or not rec.get("module"):
            continue
        f = out.setdefault(rec["function"], {"modules": set(), "configs": []})
        f["modules"].add(str(capture / rec["module"]))
        cfg = {"kwargs": rec.get("constexprs", {}), "num_warps": rec["num_warps"],
               "num_stages": rec["num_stages"]}
        if cfg not in f["configs"]:
            f["configs"].append(cfg)
    return out


def kernel_anchors(folder: Path, stock_file: str, entry: dict, specs: list[dict], name: str,
                   runs: dict[str, dict]) -> dict:
    """One committed kernel: each mode's config compiled (or why not)."""
    ident = ptx_identity_sha256(read_ptx_file(folder / stock_file))
    launches = {s["kernel"]: (s["args"], s["grid"]) for s in specs if s["ptx"] == stock_file}
    recorded = recorded_config(specs, stock_file, entry)
    out = {}
    for mode, found in runs.items():
        f = found.get(name)
        if f is None:
            out[mode] = {"error": f"the {mode} run launched no kernel of this name"}
            continue
        if len(f["configs"]) != 1:
            out[mode] = {"error": f"the {mode} run launched it with {len(f['configs'])} configs"}
            continue
        got = build_kernel(sorted(f["modules"]), name, ident, launches, recorded,
                           configs={f"anchor:{mode}": f["configs"][0]})
        out[mode] = got["variants"][0] if "variants" in got else {"error": got["error"]}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workloads", nargs="*", default=list(NAMES))
    p.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    p.add_argument("--scratch", type=Path, default=Path("/tmp/chronos-anchors"))
    args = p.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    if ptxas := inductor_ptxas():  # the ptxas the stock PTX was made under (scripts/make_knob_variants.py)
        os.environ.setdefault("TRITON_PTXAS_PATH", ptxas)
    import torch
    import triton

    for w in args.workloads:
        folder = ROOT / "data/kernels/captured" / w
        knobs = json.loads((folder / "knobs.json").read_text())["kernels"]
        specs = json.loads((folder / "specs.json").read_text())
        names = {i["stock_ptx"]: i["name"] for i in json.loads((folder / "triton.json").read_text()).values()}
        runs, codes = {}, {}
        for mode in args.modes:
            codes[mode], cap = capture_run(w, mode, args.scratch)
            runs[mode] = anchor_configs(cap)
            print(f"{w} {mode}: exit {codes[mode]}, {len(runs[mode])} Inductor kernels recorded", flush=True)
        entries = {}
        for stock_file, entry in sorted(knobs.items()):
            if not entry.get("remade_stock"):
                continue
            try:
                modes = kernel_anchors(folder, stock_file, entry, specs, names[stock_file], runs)
            except Exception as e:  # noqa: BLE001 - one kernel's failure is said, the rest go on
                modes = {m: {"error": error_text(e)} for m in args.modes}
            for mode, v in modes.items():
                if "ptx_text" in v:
                    v["ptx"] = f"anchors/{entry['stem']}/{mode}.ptx.gz"
                    gz(args.out / "data/kernels/captured" / w / v["ptx"], v.pop("ptx_text"))
            entries[stock_file] = modes
        prov = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                "torch": torch.__version__, "triton": triton.__version__, "capture_exit": codes,
                "modes": {m: MODES[m] for m in args.modes}, "command": " ".join(sys.argv)}
        dest = args.out / "data/kernels/captured" / w / "anchors.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps({"provenance": prov, "kernels": entries}, indent=1, sort_keys=True) + "\n")
        made = {m: sum(1 for e in entries.values() if "ptx" in e.get(m, {})) for m in args.modes}
        same = {m: sum(1 for e in entries.values() if e.get(m, {}).get("same_as_stock")) for m in args.modes}
        print(f"{w}: {len(entries)} kernels; anchor variants {made}, same config as stock {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
