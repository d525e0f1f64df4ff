"""Stage `knob_anchors` (#28 item 5): per captured kernel, the configs Inductor's max-autotune and
coordinate-descent tuners choose (scripts/make_anchor_variants.py) beside stock and Chronos v3's winner in one
comparison (timed within search.knob_census.anchor_tolerance), then v2 PTX actions on top of coordinate
descent's kernel (chronos.search.knob_anchors); stage knob_census's section of that name.

    python -m chronos.stages.knob_anchors --params params.yaml --kernels data/kernels \
        --knob-parts data/knob_census --joint-parts data/knob_ptx --blocks-parts data/knob_blocks \
        --parts data/knob_anchors --out reports/knob_anchors.json [--backend gpu|replay]
"""

from __future__ import annotations

import sys

from chronos.stages import knob_sections


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_anchors", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
