"""One kernel tuned: its side-by-side comparison in time (chronos.optimize.timed) and the fresh
comparison that confirms a returned set before it may deploy; kernels with float
atomics are skipped, with the reason."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.ptx.atomics import float_atomics


def captured_present(spec) -> list[str]:
    """The arguments of `spec` whose captured data file is present (draw 0 verifies on them)."""
    return sorted(a.name for a in spec.args if a.data and Path(a.data).is_file())


def tune_one(spec, specs_json: Path, backend, policy, cfg, fixed=(), confirm=True) -> tuple[dict, str]:
    """One kernel's side-by-side comparison (chronos.optimize.timed) -> (its part row, the PTX to deploy or
    "" when the baseline stays). A ChronosError becomes the row's `error`: the caller's run goes on. With
    `confirm`, a returned set is compared once more (`confirm_one`) and deploys only if that confirms it."""
    from chronos.kernels.spec import load_module
    from chronos.optimize import optimize_kernel

    try:
        res = optimize_kernel(spec, load_module(specs_json, spec), backend, policy, cfg, extra=fixed)
    except ChronosError as e:
        return {"kernel": spec.kernel, "verdict": "unmeasured", "error": one_line(e, 400)}, ""
    row = {**res.to_json(), "provenance": backend.provenance(), "verified_draws": cfg.measure.input_draws,
           "captured_inputs": captured_present(spec)}
    if cfg.measure.tolerance != "strict":  # what the DB entry says its outputs were verified against
        row["tolerance"] = cfg.measure.tolerance
    returned = row.get("returned", "baseline") != "baseline"
    if returned and confirm:
        row["confirm"] = confirm_one(spec, specs_json, backend, res.ptx, row["returned"].split("+"), cfg)
    return row, (res.ptx if returned else "")


def confirm_one(spec, specs_json: Path, backend, tuned_ptx: str, actions, cfg) -> dict:
    """A fresh side-by-side comparison of the baseline, the returned set and the baseline again (an A/A
    control inside it). The best of many contenders in one comparison tends to look faster there than it
    is (the winner's curse): on the H200, sets chosen on graph-timed kernels under 20 µs often measured
    slower in the next comparison (data/headroom). The verdict here decides deployment
    (chronos.tuning.deploy_rule)."""
    from chronos.kernels.spec import load_module
    from chronos.kernels.variant import Variant
    from chronos.ptx import emit
    from chronos.search.timed import time_row

    base = emit(load_module(specs_json, spec))
    variants = [Variant(spec, base, ()), Variant(spec, tuned_ptx, tuple(actions)), Variant(spec, base, ())]
    try:
        cmp = backend.compare(spec, variants, cfg.timing)
    except ChronosError as e:
        return {"verdict": "unmeasured", "error": one_line(e, 400)}
    row = time_row(cmp, 1, cfg.timing, cfg.search.greedy.min_gain)
    aa = cmp.estimate(2, cfg.timing)
    return {"ratio": row.get("ratio"), "ci": row.get("ci"), "verdict": row["verdict"], "primary": cmp.primary,
            "aa_ratio": aa.ratio if aa else None, "aa_ci": [aa.low, aa.high] if aa else None,
            "measured_at": cmp.provenance.get("created_at", "")}


def skipped_as_racy(spec, ptx: str, parts: Path) -> bool:
    """A kernel with float atomics differs from itself run to run: nothing about it can be verified
    bit-exactly, so its part file records it as skipped, with the reason."""
    racy = float_atomics(ptx)
    if racy:
        row = {"kernel": spec.kernel, "verdict": "skipped",
               "reason": f"float atomics ({', '.join(racy)}): the output depends on the order the threads "
                         "add in, so no variant can be verified bit-exactly"}
        (parts / f"{spec.kernel}.json").write_text(json.dumps(row, indent=1) + "\n")
        print(f"tune: {spec.kernel:44s} skipped: float atomics", flush=True)
    return bool(racy)
