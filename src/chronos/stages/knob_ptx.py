"""Stage `knob_ptx` (#28): the v2 PTX actions on top of each captured kernel's compile-knob winner (or stock),
beside stock in one comparison (chronos.search.knob_ptx); stage knob_census's section of that name.

    python -m chronos.stages.knob_ptx --params params.yaml --kernels data/kernels \
        --knob-parts data/knob_census --parts data/knob_ptx --out reports/knob_ptx.json [--backend gpu|replay]
"""

from __future__ import annotations

import sys

from chronos.stages import knob_sections


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_ptx", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
