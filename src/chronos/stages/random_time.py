"""Stage `random_time` (#14): seeded random search in wall time on the census's kernels (params
`search.random_time`), the comparator for stage headroom's greedy: per kernel `sets` random legal sequences
of v2 actions beside the baseline in one side-by-side comparison, the fastest judged again beside the
baseline alone (chronos.search.timed_random). Recorded per kernel in data/random_time/<family>/; on replay
each is searched again from the store and must choose as recorded (chronos.search.headroom).

    python -m chronos.stages.random_time --params params.yaml --kernels data/kernels \
        --parts data/random_time --out reports/random_time.json [--backend gpu|replay] [--budget S]
"""

from __future__ import annotations

import sys

from chronos.stages import timed_sections


def main(argv: list[str] | None = None) -> int:
    return timed_sections.main("random_time", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
