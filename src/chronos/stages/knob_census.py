"""Stage `knob_census` (#28): per captured kernel (census's choice: the most GPU time first), every single
compile-knob value of action space v3 beside stock in one side-by-side comparison, bit-exact verified, the
fastest winner judged again beside stock alone (chronos.search.knob_census). With `--section knob_ptx`:
the v2 PTX actions on top of each kernel's knob winner (chronos.search.knob_ptx; reads the census's parts).
Recorded per kernel in data/<section>/<family>/; on replay each is compared again from the store and must
choose as recorded.

    python -m chronos.stages.knob_census --params params.yaml --kernels data/kernels \
        --parts data/knob_census --out reports/knob_census.json [--backend gpu|replay] [--budget S]
    python -m chronos.stages.knob_census --section knob_ptx --knob-parts data/knob_census \
        --parts data/knob_ptx --out reports/knob_ptx.json ...
"""

from __future__ import annotations

import sys

from chronos.stages import knob_sections


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_census", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
