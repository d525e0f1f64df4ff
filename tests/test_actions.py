"""The action space: names, order, conflict groups, mask and history."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronos.actions import (
    ACTION_INDEX,
    ACTION_NAMES,
    CONFLICT_GROUPS,
    NUM_ACTIONS,
    STOP,
    conflicts,
    get_action_history,
    get_action_mask,
)
from chronos.errors import ChronosError, UnknownActionError

SEED_ORDER = [
    "vec_ld", "vec_st", "split_ld", "cache_cs", "cache_cg", "cache_ca", "cache_cv",
    "st_cache_cs", "st_cache_wt", "st_cache_wb", "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255",
    "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl", "prefetch_L1", "prefetch_L2", "stop",
]
TRANSFORMS = [a for a in ACTION_NAMES if a != "stop"]


def test_names_and_order_are_the_seeds():
    assert list(ACTION_NAMES) == SEED_ORDER
    assert NUM_ACTIONS == 21 and STOP == 20 and ACTION_NAMES[STOP] == "stop"
    assert all(ACTION_NAMES[i] == a for a, i in ACTION_INDEX.items())


def test_conflict_groups():
    assert set(CONFLICT_GROUPS) == {"load_cache_hint", "store_cache_hint", "register_budget", "reorder",
                                    "prefetch"}
    assert CONFLICT_GROUPS["load_cache_hint"] == ("cache_cs", "cache_cg", "cache_ca", "cache_cv")
    assert CONFLICT_GROUPS["store_cache_hint"] == ("st_cache_cs", "st_cache_wt", "st_cache_wb")
    assert CONFLICT_GROUPS["prefetch"] == ("prefetch_L1", "prefetch_L2")
    grouped = [a for g in CONFLICT_GROUPS.values() for a in g]
    assert len(grouped) == len(set(grouped))  # each action in at most one group
    assert set(ACTION_NAMES) - set(grouped) == {"vec_ld", "vec_st", "split_ld", "stop"}


def test_conflicts():
    assert conflicts("cache_cg", {"cache_cs"})
    assert not conflicts("cache_cs", {"cache_cs"})  # same action: "applied", not "conflicting"
    assert not conflicts("cache_cg", {"st_cache_cs", "vec_ld"})
    assert conflicts("maxnreg_32", ["maxnreg_255"])
    for a in ("vec_ld", "vec_st", "split_ld", "stop"):
        assert not conflicts(a, TRANSFORMS)


def test_empty_mask_allows_everything():
    assert get_action_mask(set()) == [1] * 21
    assert get_action_mask(()) == [1] * 21
    assert get_action_history(set()) == [0] * 21


def test_mask_after_group_member():
    mask = get_action_mask({"cache_cs", "vec_ld"})
    for a in CONFLICT_GROUPS["load_cache_hint"]:
        assert mask[ACTION_INDEX[a]] == 0
    assert mask[ACTION_INDEX["vec_ld"]] == 0
    assert mask[ACTION_INDEX["vec_st"]] == 1 and mask[ACTION_INDEX["st_cache_cs"]] == 1
    assert mask[STOP] == 1


def test_legal_restricts_mask():
    mask = get_action_mask(["vec_st"], legal=["vec_ld", "vec_st", "maxnreg_64"])
    allowed = {ACTION_NAMES[i] for i, m in enumerate(mask) if m}
    assert allowed == {"vec_ld", "maxnreg_64", "stop"}
    assert get_action_mask((), legal=[]) == [0] * 20 + [1]


@given(st.lists(st.sampled_from(TRANSFORMS), max_size=8),
       st.one_of(st.none(), st.sets(st.sampled_from(ACTION_NAMES))))
def test_mask_and_history_invariants(applied, legal):
    mask = get_action_mask(applied, legal)
    hist = get_action_history(applied)
    assert len(mask) == len(hist) == 21 and set(mask) <= {0, 1} and set(hist) <= {0, 1}
    assert mask[STOP] == 1 and hist[STOP] == 0
    for i, a in enumerate(ACTION_NAMES[:-1]):
        assert hist[i] == (a in applied)
        expected = a not in applied and not conflicts(a, applied) and (legal is None or a in legal)
        assert mask[i] == int(expected)
        if hist[i]:
            assert mask[i] == 0


def test_sequence_types_agree():
    seq = ["vec_ld", "maxnreg_128", "prefetch_L2"]
    for applied in (seq, tuple(seq), set(seq), frozenset(seq)):
        assert get_action_mask(applied) == get_action_mask(seq)
        assert get_action_history(applied) == get_action_history(seq)


def test_at_most_one_per_group_reachable():
    """Greedily applying whatever the mask allows never puts two members of a group in `applied`."""
    for order in itertools.islice(itertools.permutations(TRANSFORMS), 50):
        applied = []
        for a in order:
            if get_action_mask(applied)[ACTION_INDEX[a]]:
                applied.append(a)
        for group in CONFLICT_GROUPS.values():
            assert sum(a in applied for a in group) <= 1


@pytest.mark.parametrize("call", [
    lambda: get_action_mask({"vec_ld", "cache_xx"}),
    lambda: get_action_history(["nope"]),
    lambda: conflicts("maxnreg_7", ()),
    lambda: get_action_mask((), legal=["bogus"]),
])
def test_unknown_action_raises(call):
    with pytest.raises(UnknownActionError) as e:
        call()
    assert isinstance(e.value, ChronosError)
    assert "unknown action" in str(e.value)


def test_bare_string_is_one_action():
    assert get_action_history("vec_ld") == get_action_history({"vec_ld"})
