"""Stage `census` (#14): stage headroom's step 0 on more kernels per family (params `search.census`):
every legal single action of the space beside the baseline, in one side-by-side comparison, and the
fastest judged again beside the baseline alone. Recorded per kernel in data/census/<family>/; on replay
each is searched again from the store and must choose as recorded (chronos.search.headroom).

    python -m chronos.stages.census --params params.yaml --kernels data/kernels --parts data/census \
        --out reports/census.json [--backend gpu|replay] [--budget S]
"""

from __future__ import annotations

import sys

from chronos.stages import timed_sections


def main(argv: list[str] | None = None) -> int:
    return timed_sections.main("census", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
