"""Clear the walks whose configs were compiled unlike their kernel's stock PTX, so that stage knob_walk
(--compile, on the GPU image) compiles and times them again (#28).

Until 2026-12-06 stage knob_walk compiled every config under Triton's own ptxas (PTX `.version 8.7`) from a
module file it named itself, while the capture and deployment compile under torch's ptxas (`.version 9.0`)
from Inductor's hashed module name: a winner that puts PTX actions on such a config is keyed by PTX no
deployment makes, and the v3 DB leaves it out (chronos.tuning.config_db.unlike). For each such kernel this
drops walk.json's compiled configs (their PTX under walk/<stem>/; the root, its module, stays) and the
knob_walk parts of every shape of its PTX: the stage then walks it afresh with the mended compiler.

    python scripts/clear_unlike_walks.py --workloads bert gpt2 llama [--all] [--dry-run]

Default: only kernels whose confirmed winner is such a config with PTX actions on top (what the DB leaves
out); --all: every kernel with a compiled config unlike its stock PTX.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.kernels.spec import load_specs, read_ptx, read_ptx_file
from chronos.tuning.config_db import DB_STAGES, latest_parts, unlike
from chronos.tuning.winners import WALK, confirmed_winner


def unlike_configs(folder: Path, entry: dict, stock: str) -> list[str]:
    """The labels of the entry's compiled configs whose PTX was compiled unlike `stock`."""
    return [label for label, c in entry.get("configs", {}).items()
            if c.get("ptx") and unlike(read_ptx_file(folder / c["ptx"]), stock)]


def walk_winner_on_top(row: dict) -> bool:
    winner = confirmed_winner(row)[0]
    return bool(winner and winner[0] and winner[0].startswith(WALK) and winner[1])


def stems_to_clear(root: Path, w: str, everything: bool) -> dict[str, list[str]]:
    """stem -> its configs compiled unlike its stock PTX, for the kernels to walk again."""
    folder = root / "data/kernels/captured" / w
    manifest = json.loads((folder / "walk.json").read_text())["kernels"]
    specs = {s.kernel: s for s in load_specs(folder / "specs.json")}
    parts = latest_parts([root / "data" / s / "captured" / w for s in DB_STAGES])
    rows = [r for r in (json.loads(p.read_text()) for p in parts) if r["kernel"] in specs]
    wanted = {specs[r["kernel"]].ptx for r in rows if everything or walk_winner_on_top(r)}
    out = {}
    for ptx, entry in manifest.items():
        spec = next((s for s in specs.values() if s.ptx == ptx), None)
        if ptx not in wanted or spec is None or not entry.get("configs"):
            continue
        if bad := unlike_configs(folder, entry, read_ptx(folder / "specs.json", spec)):
            out[entry["stem"]] = bad
    return out


def clear(root: Path, w: str, stems: dict[str, list[str]]) -> list[Path]:
    """Drop the stems' compiled configs from walk.json (and their PTX) and their knob_walk parts."""
    folder = root / "data/kernels/captured" / w
    doc = json.loads((folder / "walk.json").read_text())
    removed = []
    for entry in doc["kernels"].values():
        if entry.get("stem") in stems:
            for c in entry.get("configs", {}).values():
                if c.get("ptx"):
                    (folder / c["ptx"]).unlink(missing_ok=True)
            entry["configs"] = {}
    (folder / "walk.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    for part in sorted((root / "data/knob_walk/captured" / w).glob("*.json")):
        if any(part.name.startswith(f"{stem}_") for stem in stems):
            part.unlink()
            removed.append(part)
    return removed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", nargs="+", required=True)
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--all", action="store_true", help="every kernel with a config compiled unlike stock")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    for w in args.workloads:
        if not (args.root / "data/kernels/captured" / w / "walk.json").is_file():
            print(f"{w}: no walk.json under {args.root / 'data/kernels/captured' / w}: nothing to clear "
                  "(scripts/make_walk_roots.py writes it)", file=sys.stderr)
            return 2
        stems = stems_to_clear(args.root, w, args.all)
        for stem, labels in sorted(stems.items()):
            print(f"{w}: {stem}: {len(labels)} configs compiled unlike stock")
        if not args.dry_run:
            parts = clear(args.root, w, stems)
            print(f"{w}: {len(stems)} kernels cleared, {len(parts)} knob_walk parts removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
