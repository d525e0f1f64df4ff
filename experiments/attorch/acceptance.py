"""attorch's own tests, stock and under `chronos run --db`, from the junit files of one device call, into
data/library/attorch/acceptance.json (read by stage `captured`). With a second stock run
(tests_stock2.xml), a test whose outcome stock itself does not repeat is listed as such, and a deployed
failure counts against Chronos only where both stock runs passed (`failed_tuned_only`):

    python experiments/attorch/acceptance.py LOGS_DIR --out data/library/attorch/acceptance.json
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path


def outcomes(junit: Path) -> dict[str, str]:
    """{test id: passed | failed | skipped} from a pytest junit XML file and its `.extra` sibling (a second
    set of tests run under its own timeout), when there is one."""
    out = {}
    extra = junit.with_suffix(".extra.xml")
    cases = [c for f in (junit, extra) if f.is_file() for c in ET.parse(f).getroot().iter("testcase")]
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        failed = bool(kinds & {"failure", "error"})
        out[name] = "failed" if failed else "skipped" if "skipped" in kinds else "passed"
    return out


def _merged_stats(logs: Path) -> dict:
    """`chronos run --stats` of the deployed run(s): counts added, names joined."""
    out: dict = {}
    for f in sorted(logs.glob("tests_run_stats*.json")):
        for k, v in json.loads(f.read_text()).items():
            if isinstance(v, (int, list)) and not isinstance(v, bool):
                out[k] = out.get(k, 0 if isinstance(v, int) else []) + v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    stock, tuned = outcomes(args.logs / "tests_stock.xml"), outcomes(args.logs / "tests_tuned.xml")
    repeat = args.logs / "tests_stock2.xml"
    stock2 = outcomes(repeat) if repeat.is_file() else stock
    stats = _merged_stats(args.logs)
    failed = {k: sorted(n for n, v in d.items() if v == "failed")
              for k, d in (("stock", stock), ("stock2", stock2), ("tuned", tuned))}
    record = {
        "collected": len(stock), "collected_tuned": len(tuned),
        "passed_stock": sum(v == "passed" for v in stock.values()),
        "passed_tuned": sum(v == "passed" for v in tuned.values()),
        "failed_stock": failed["stock"], "failed_tuned": failed["tuned"],
        "stock_repeated": repeat.is_file(),
        "passed_stock_repeat": sum(v == "passed" for v in stock2.values()),
        "failed_stock_repeat": failed["stock2"],
        "stock_unrepeatable": sorted(n for n in stock if stock[n] != stock2.get(n)),
        "failed_tuned_only": sorted(set(failed["tuned"]) - set(failed["stock"]) - set(failed["stock2"])),
        "passed_tuned_only": sorted(set(failed["stock"]) & set(failed["stock2"]) - set(failed["tuned"])),
        "deployed": {k: stats[k] for k in ("swapped", "cached", "missed", "rejected", "cached_stock")
                     if k in stats}
        | {"tuned_names": sorted(set(stats["swapped_names"] + stats["cached_names"]))},
        "provenance": {"versions": (args.logs / "provenance.txt").read_text().splitlines(),
                       "command": args.command},
    }
    args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: record[k] for k in ("collected", "passed_stock", "passed_tuned")}))


if __name__ == "__main__":
    main()
