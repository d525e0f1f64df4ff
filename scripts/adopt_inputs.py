"""Give the committed captured corpus its captured inputs again, from a recapture on the device (#13).

    python3 scripts/adopt_inputs.py RECAPTURE_DIR CORPUS_DIR [--respec-invalid] [--add-missing] [--out F]

The inputs that `chronos capture` records are git-ignored (size), so a clone's corpus verifies on fresh
draws only. A recapture of the same workload on the same software compiles the same kernels (their names
hold a per-process id, so a recaptured kernel is found by its launch: entry, grid, block, every argument's
name, kind, dtype, size and scalar value); for every corpus kernel whose
recaptured PTX is identical but for its `.file` lines (that path), each captured argument's file is copied
to the path the corpus spec names, then read back
through the spec (`captured_data`: a file that does not fit its argument is removed and counted). Nothing
of the corpus's specs changes, except with --respec-invalid: a kernel whose tune part records an invalid
baseline takes the recapture's arguments (a fixed capture, e.g. integer ranges taken over a tensor's own
elements) and its part is removed, so that `chronos tune --retry-invalid` measures it again; and with
--add-missing, a recaptured kernel whose launch the corpus lacks (a launch an older capture could not map,
now mapped) joins the corpus with its spec, PTX, Triton identity and inputs, and the corpus's capture.json
takes the recapture's list of dropped launches (the added kernels are named under `added`). Prints and
writes (--out) what it did per outcome.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

from chronos.errors import SpecError
from chronos.kernels.spec import load_specs, read_ptx
from chronos.measure.inputs import captured_data

_FILE_LINE = re.compile(r"^\s*\.file\s.*\n", re.MULTILINE)


def _raw(d: Path) -> list[dict]:
    return json.loads((d / "specs.json").read_text())


def respec_invalid(recap: Path, corpus: Path) -> list[str]:
    """Kernels whose tune part has an invalid baseline take the recapture's args; their parts go."""
    theirs = {k["kernel"]: k for k in _raw(recap)}
    by_launch = {_launch_key(s): theirs[s.kernel] for s in load_specs(recap / "specs.json")}
    ours = {s.kernel: s for s in load_specs(corpus / "specs.json")}
    raw, changed = _raw(corpus), []
    for k in raw:
        part = corpus / "tune-parts" / f"{k['kernel']}.json"
        new = theirs.get(k["kernel"]) or by_launch.get(_launch_key(ours[k["kernel"]]))
        if not part.is_file() or new is None:
            continue
        if json.loads(part.read_text()).get("baseline", {}).get("valid", True):
            continue
        if k["args"] != new["args"]:
            k["args"] = new["args"]
            changed.append(k["kernel"])
            part.unlink()
            part.with_suffix(".ptx").unlink(missing_ok=True)
    (corpus / "specs.json").write_text(json.dumps(raw, indent=1) + "\n")
    return changed


def _launch_key(spec) -> tuple:
    """What identifies a launch across captures: the entry, grid, block and every argument's name, kind,
    dtype, size and scalar value (a kernel's name is not enough: its signature hash holds a per-process
    object id, so every capture names its kernels anew)."""
    return (spec.entry, tuple(spec.grid), tuple(spec.block),
            tuple((a.name, a.kind, a.dtype, a.elements, a.value) for a in spec.args))


def _code(ptx: str) -> str:
    """PTX less its `.file` lines: they hold the path the workload was compiled under, nothing executed."""
    return _FILE_LINE.sub("", ptx)


def adopt(recap: Path, corpus: Path) -> dict:
    new = {s.kernel: s for s in load_specs(recap / "specs.json")}
    by_launch = {_launch_key(s): s for s in new.values()}
    raw = {k["kernel"]: k for k in _raw(corpus)}
    outcome: Counter = Counter()
    for spec in load_specs(corpus / "specs.json"):
        other = new.get(spec.kernel) or by_launch.get(_launch_key(spec))
        if other is None:
            outcome["kernel_not_recaptured"] += 1
            continue
        if _code(read_ptx(recap / "specs.json", other)) != _code(read_ptx(corpus / "specs.json", spec)):
            outcome["ptx_differs"] += 1
            continue
        theirs = {a.name: a for a in other.args}
        for arg, rel in zip(spec.args, raw[spec.kernel]["args"], strict=True):
            src = theirs.get(arg.name)
            if not arg.data:
                continue
            if src is None or not src.data or not Path(src.data).is_file():
                outcome["input_not_recaptured"] += 1
                continue
            Path(arg.data).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src.data, arg.data)
            try:
                captured_data(spec, arg)
                outcome["input_adopted"] += 1
            except SpecError as e:
                print(f"adopt: {spec.kernel} {rel['name']}: {e}", file=sys.stderr)
                Path(arg.data).unlink()
                outcome["input_unfit"] += 1
    return dict(outcome)


def add_missing(recap: Path, corpus: Path) -> list[str]:
    """Recaptured kernels whose launch no corpus kernel has join the corpus (see the module's doc)."""
    ours = load_specs(corpus / "specs.json")
    known = {(_launch_key(s), _code(read_ptx(corpus / "specs.json", s))) for s in ours}
    raw_theirs = {k["kernel"]: k for k in _raw(recap)}
    added = [s for s in load_specs(recap / "specs.json") if s.kernel not in {o.kernel for o in ours}
             and (_launch_key(s), _code(read_ptx(recap / "specs.json", s))) not in known]
    if not added:
        return []
    triton_ids = {c: json.loads((c / "triton.json").read_text()) for c in (recap, corpus)}
    for s in added:
        rel = raw_theirs[s.kernel]
        for name in [rel["ptx"], *(a["data"] for a in rel["args"] if a.get("data"))]:
            if (recap / name).is_file():
                (corpus / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(recap / name, corpus / name)
        triton_ids[corpus][s.kernel] = triton_ids[recap][s.kernel]
    (corpus / "specs.json").write_text(json.dumps(_raw(corpus) + [raw_theirs[s.kernel] for s in added],
                                                  indent=1) + "\n")
    (corpus / "triton.json").write_text(json.dumps(triton_ids[corpus], indent=1, sort_keys=True) + "\n")
    cap, theirs = (json.loads((c / "capture.json").read_text()) for c in (corpus, recap))
    for key in ("dropped", "dropped_launches", "unmapped"):
        cap[key] = theirs.get(key, [] if key != "dropped_launches" else 0)
    names = {s.kernel for s in added}
    cap["per_kernel"] += [k for k in theirs["per_kernel"] if k["kernel"] in names]
    cap["kernels"] = len(ours) + len(added)
    cap["distinct_ptx"] = len({i["stock_ptx"] for i in triton_ids[corpus].values()})
    cap["added"] = sorted(names)
    (corpus / "capture.json").write_text(json.dumps(cap, indent=1) + "\n")
    return sorted(names)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recapture", type=Path)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--respec-invalid", action="store_true")
    ap.add_argument("--add-missing", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = {"corpus": str(args.corpus), "recapture": str(args.recapture)}
    if args.respec_invalid:
        result["respecified"] = respec_invalid(args.recapture, args.corpus)
    if args.add_missing:
        result["added"] = add_missing(args.recapture, args.corpus)
    result["inputs"] = adopt(args.recapture, args.corpus)
    print(f"adopt {args.corpus}: {json.dumps(result)}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
