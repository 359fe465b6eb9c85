"""The size space: index rule, conversions, sampling and bad input."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from nasfilter.bench.spaces import sss as space
from nasfilter.bench.spaces.sss import CHANNEL_CHOICES, N_ARCHS, Arch, as_arch

# Reference pairs from docs/facts.md §1 (the official archive's order).
REFERENCE = [
    ("8:8:8:8:8", 0),
    ("64:64:64:64:64", 32767),
    ("8:8:8:16:40", 12),
    ("8:8:8:16:32", 11),
    ("8:8:40:32:40", 284),
]


@pytest.mark.parametrize(("text", "index"), REFERENCE)
def test_reference_indices(text: str, index: int) -> None:
    assert Arch.from_string(text).index == index
    assert str(Arch.from_index(index)) == text


@pytest.mark.slow
def test_index_rule_matches_the_nats_meta_archs() -> None:
    """The fixture's meta_archs list is the archive's own index -> string table."""
    import bz2
    import pickle
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "data/nats-sss/NATS-sss-v1_0-50262-simple"
    meta_path = fixture / "meta.pickle.pbz2"
    with bz2.open(meta_path) as fh:
        meta_archs = pickle.load(fh)["meta_archs"]
    assert len(meta_archs) == N_ARCHS
    ours = [str(Arch(tuple(int(c) for c in row))) for row in space.all_channels()]
    assert ours == meta_archs


def test_every_architecture_round_trips() -> None:
    channels = space.all_channels()
    assert channels.shape == (N_ARCHS, 5)
    assert np.array_equal(space.channels_to_index(channels), np.arange(N_ARCHS))
    assert np.array_equal(space.index_to_channels(np.arange(N_ARCHS)), channels)
    assert len({tuple(r) for r in channels.tolist()}) == N_ARCHS
    with pytest.raises(ValueError):
        channels[0, 0] = 16  # read-only


def test_as_arch_accepts_every_form() -> None:
    a = Arch((8, 8, 40, 32, 40))
    for form in (a, 284, "284", "8:8:40:32:40", [8, 8, 40, 32, 40], np.array([8, 8, 40, 32, 40])):
        assert as_arch(form) == a
    assert as_arch(np.int64(284)) == a


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ((8, 8, 8, 8), "5 channel counts"),
        ((8, 8, 8, 8, 8, 8), "5 channel counts"),
        ((8, 8, 8, 8, 12), "one of"),
        ((8, 8, 8, 8, 72), "one of"),
        ((8, 8, 8, 8, 8.0), "integer"),
        ((8, 8, 8, 8, True), "integer"),
        ("8:8:8:8", "joined by ':'"),
        ("8:8:8:8:x", "joined by ':'"),
        ("8:8:8:8:12", "one of"),
        (-1, "[0, 32767]"),
        (32768, "[0, 32767]"),
        (True, "cannot read"),
        (3.0, "cannot read"),
    ],
)
def test_bad_input_names_the_value(bad: object, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        as_arch(bad)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_vectorized_conversions_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="32768"):
        space.index_to_channels(np.array([0, 32768]))
    with pytest.raises(ValueError, match="channel counts must be in"):
        space.channels_to_index(np.array([[8, 8, 8, 8, 9]]))
    with pytest.raises(ValueError, match="last axis"):
        space.channels_to_index(np.array([8, 8, 8, 8]))


def test_arch_is_immutable_hashable_and_ordered() -> None:
    a = Arch.from_index(5)
    with pytest.raises(AttributeError):
        a.channels = (8, 8, 8, 8, 8)  # type: ignore[misc]
    assert len({a, Arch.from_index(5), Arch.from_index(6)}) == 2
    assert sorted([Arch.from_index(7), Arch.from_index(3)])[0].index == 3


def test_neighbours_differ_in_exactly_one_layer() -> None:
    base = Arch.from_string("8:16:24:32:64")
    nbrs = space.neighbours(base)
    assert len(nbrs) == 5 * 7 == len(set(nbrs))
    for n in nbrs:
        assert sum(x != y for x, y in zip(n.channels, base.channels, strict=True)) == 1


def test_sampling_is_uniform_and_driven_by_the_generator() -> None:
    state = (random.getstate(), np.random.get_state()[1].copy())
    draws = [space.sample(np.random.default_rng(7)) for _ in range(3)]
    assert draws[0] == draws[1] == draws[2]  # same seed, same draw
    rng = np.random.default_rng(0)
    channels = np.array([space.sample(rng).channels for _ in range(8000)])
    # Each layer's choice is uniform: chi-square against 1000 expected per value.
    for layer in range(5):
        counts = np.array([(channels[:, layer] == c).sum() for c in CHANNEL_CHOICES])
        chi2 = ((counts - 1000.0) ** 2 / 1000.0).sum()
        assert chi2 < 24.3  # 99.9th percentile of chi-square with 7 degrees of freedom
    idx = space.sample_indices(np.random.default_rng(1), 50_000)
    assert idx.min() >= 0 and idx.max() < N_ARCHS and len(np.unique(idx)) > 25_000
    assert random.getstate() == state[0]
    assert np.array_equal(np.random.get_state()[1], state[1])


def test_mutate_changes_one_layer_to_a_different_value() -> None:
    rng = np.random.default_rng(3)
    base = Arch.from_string("64:8:32:56:16")
    seen = set()
    for _ in range(2000):
        child = space.mutate(base, rng)
        diff = [k for k in range(5) if child.channels[k] != base.channels[k]]
        assert len(diff) == 1
        seen.add(child)
    assert seen == set(space.neighbours(base))


def test_index_rule_formula_from_facts() -> None:
    for ch in itertools.islice(itertools.product(CHANNEL_CHOICES, repeat=5), 0, None, 997):
        expected = sum((c // 8 - 1) * 8 ** (4 - k) for k, c in enumerate(ch))
        assert Arch(ch).index == expected


def test_cached_arch_lookup_equals_the_validating_constructor() -> None:
    for i in range(0, N_ARCHS, 37):
        a = space.arch_from_index(i)
        assert a == Arch.from_index(i) and space.index_of(a) == i
        assert space.arch_from_index(i) is a  # built once
    assert space.index_of(Arch.from_string("64:64:64:64:64")) == 32767
    with pytest.raises(ValueError, match="32767"):
        space.arch_from_index(N_ARCHS)
