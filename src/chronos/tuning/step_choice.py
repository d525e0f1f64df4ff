"""The step decides what deploys (#28). Each winner is faster alone, measured side by side beside stock; in
the step around it, one kind can still cost more than it gains (bert's L2 cache-policy winners: its step ran
faster without them). scripts/e2e_one_process.py times, beside the full DB's set, the DB less the winners of
some actions (`also`: a set named `without_<ACTION+GROUP...>`, device.sh e2e_v3's LEAVE_OUT); where such a
set's step is faster than the full set's beyond its 95% interval, in the latest run and in no earlier run
slower, the workload's DB leaves those winners out (`chronos tune --configs-from`), and the report counts
that set as what Chronos deploys."""

from __future__ import annotations

import json
from pathlib import Path

PREFIX = "without_"


def left_out_of(name: str) -> list[str] | None:
    """The actions and groups a set's name says its DB left out; None for a name that does not say
    (`without_left_out`, the name before device.sh named its sets)."""
    if not name.startswith(PREFIX) or name == PREFIX + "left_out":
        return None
    return name[len(PREFIX):].split("+")


def step_choice(latest: dict, earlier: list[dict] = ()) -> dict:
    """{"set": the name of the set that deploys ("tuned": the full DB), "leave_out": its left-out words,
    "why": the measurements}. `latest`: the workload's e2e-one-process.json; `earlier`: the runs before it
    (e2e-anchor-runs/), where the same set, if timed, must not have been slower than the full DB's."""
    found = []
    for name, v in (latest.get("also") or {}).items():
        words, over = left_out_of(name), v["over_tuned"]
        if words is None or over["ci95"][0] <= 1.0:
            continue
        before = [run["also"][name]["over_tuned"] for run in earlier if name in (run.get("also") or {})]
        if all(b["median"] >= 1.0 for b in before):
            found.append((over["median"], name, words, over, before))
    if not found:
        return {"set": "tuned", "leave_out": [], "why": "no set less some winners ran the step faster "
                                                         "than the full DB beyond its 95% interval"}
    _, name, words, over, before = max(found)
    prov = latest.get("provenance") or {}
    earlier_runs = ", ".join(f"{b['median']:.4f}x" for b in before)
    why = (f"the step ran {over['median']:.4f}x ({over['ci95'][0]:.4f}-{over['ci95'][1]:.4f}) faster without "
           f"the winners of {'+'.join(words)} ({prov.get('date', '?')}, {prov.get('gpu', '?')}"
           + (f"; earlier runs {earlier_runs})" if before else ")"))
    return {"set": name, "leave_out": words, "why": why}


def workload_step_choice(folder: Path) -> dict:
    """step_choice of the workload in `folder` (its e2e-one-process.json and e2e-anchor-runs/*.json, the
    runs before it); the full DB where it has no one-process run."""
    path = folder / "e2e-one-process.json"
    if not path.is_file():
        return {"set": "tuned", "leave_out": [], "why": f"no {path.name}"}
    earlier = [json.loads(p.read_text()) for p in sorted((folder / "e2e-anchor-runs").glob("*.json"))]
    return step_choice(json.loads(path.read_text()), earlier)
