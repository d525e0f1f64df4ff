"""Do the compile-knob winners replicate? (#28) Every knob value the census confirmed faster than stock was
timed again, beside stock, in stage knob_ptx's comparison (another device call, other contenders around it):
the ratio of the same two kernels from the two runs, side by side. Reads the committed reports only.

    python experiments/action_space/knob_replication.py   # its output: knob_replication.txt beside it
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def main() -> None:
    census = {r["kernel"]: r for r in json.loads((REPORTS / "knob_census.json").read_text())["kernels"]
              if "best" in r}
    rows = []
    for r in json.loads((REPORTS / "knob_ptx.json").read_text())["kernels"]:
        if "best" not in r or not r["root"]:
            continue
        alone = next(c for c in r["candidates"] if c["actions"] == [r["root"]])
        before = census[r["kernel"]]["best"]["ratio"]
        rows.append((r["family"], r["kernel"], r["root"], before, alone["ratio"], alone["verdict"]))
    print(f"{'workload':8s} {'kernel':50s} {'knob':12s} {'census':>7s} {'again':>7s} verdict")
    for fam, kernel, knob, a, b, verdict in rows:
        print(f"{fam.split('/')[-1]:8s} {kernel[:50]:50s} {knob:12s} {a:7.4f} {b:7.4f} {verdict}")
    diffs = [abs(a - b) for *_, a, b, _ in rows]
    print(f"{len(rows)} knob winners; faster again: {sum(v == 'faster' for *_, v in rows)}; "
          f"|ratio difference| median {statistics.median(diffs):.4f}, max {max(diffs):.4f}")


if __name__ == "__main__":
    main()
