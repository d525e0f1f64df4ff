"""Round trip: emit(parse(x)) assembles with ptxas to the same SASS (.text.* sections) as x, on the whole
corpus."""

import pytest

from chronos.ptx import emit, parse
from chronos.toolchain import assemble, text_sections

from .corpus import corpus, target_arch

CORPUS = corpus()


def test_corpus_covers_every_family():
    ids = [i for i, _ in CORPUS]
    assert sum(i.startswith("gemm_tile_") for i in ids) == 128
    for family in ("nvcc/", "triton/"):
        assert any(i.startswith(family) for i in ids), f"no {family} files in tests/corpus"
    archs = {target_arch(t) for _, t in CORPUS}
    assert {"sm_89", "sm_90", "sm_90a"} <= archs


@pytest.mark.parametrize("name, text", CORPUS, ids=[i for i, _ in CORPUS])
def test_roundtrip_same_sass(name, text, ptxas):
    arch = target_arch(text)
    emitted = emit(parse(text, file=name))
    original = text_sections(assemble(text, arch).cubin)
    again = text_sections(assemble(emitted, arch).cubin)
    assert original, f"{name}: no .text sections"
    assert again == original, f"{name}: SASS differs after round trip for {arch}"
    assert emit(parse(emitted)) == emitted  # printing is a fixed point
