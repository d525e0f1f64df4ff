"""Stage `knob_blocks` (#28): block sizes (XBLOCK, R0_BLOCK...) of each captured Inductor kernel's config
beside the knob_ptx step's winner, then the v2 PTX actions on top of a block winner, beside stock, the fastest
confirmed alone (chronos.search.knob_blocks); stage knob_census's section of that name.

    python -m chronos.stages.knob_blocks --params params.yaml --kernels data/kernels \
        --knob-parts data/knob_census --joint-parts data/knob_ptx --parts data/knob_blocks \
        --out reports/knob_blocks.json [--backend gpu|replay]
"""

from __future__ import annotations

import sys

from chronos.stages import knob_sections


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_blocks", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
