"""Pareto fronts and indicators, against brute force and against moocore and pymoo.

moocore and pymoo minimize by default: their calls below either negate the points (and the
reference) or pass ``maximise=True``; both are checked. pymoo 0.6.2's ``HV``, ``IGDPlus``
and default ``NonDominatedSorting`` call moocore underneath, so the tests also use pymoo's
own pure-Python paths (``NonDominatedSorting(dominator=Dominator())``, ``IGDPlus`` with
``norm_by_dist``) as references independent of moocore.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import moocore
import numpy as np
import pytest

from nasfilter.pareto import (
    DEFAULT_MARGIN,
    FrontMetrics,
    Normalization,
    additive_epsilon,
    compare_fronts,
    front_recall,
    hypervolume_2d,
    igd_plus,
    nondominated_mask,
    nondominated_ranks,
)

ORIENTATIONS = [(True, True), (True, False), (False, True), (False, False)]


# ----------------------------------------------------------------------------- instances


def random_sets(seed: int, count: int, max_n: int = 40) -> Iterator[np.ndarray]:
    """Point sets (n, 2) of mixed kinds: few distinct values (ties, duplicates), continuous,
    one column rounded, anti-correlated (large fronts)."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(1, max_n + 1))
        kind = i % 4
        if kind == 0:
            pts = rng.integers(0, 5, size=(n, 2)).astype(float)
        elif kind == 1:
            pts = rng.normal(size=(n, 2))
        elif kind == 2:
            pts = np.column_stack([np.round(rng.uniform(60, 95, n)), rng.uniform(1e2, 2e5, n)])
        else:
            x = rng.uniform(0, 1, n)
            pts = np.column_stack([x, 1 - x + rng.normal(0, 0.05, n)])
        if n > 2 and rng.random() < 0.5:  # add exact copies of some rows
            pts = np.vstack([pts, pts[rng.integers(0, n, size=3)]])
        yield pts[rng.permutation(len(pts))]


def oriented(points: np.ndarray, maximize: tuple[bool, bool]) -> np.ndarray:
    """Flip minimized columns so that everything is maximized."""
    return points * np.where(maximize, 1.0, -1.0)


# ---------------------------------------------------------------------- brute-force references


def brute_dominated(points: np.ndarray) -> np.ndarray:
    """dominated[i]: some j is >= i everywhere and > somewhere (maximization), O(n^2)."""
    ge = np.all(points[None, :, :] >= points[:, None, :], axis=2)
    gt = np.any(points[None, :, :] > points[:, None, :], axis=2)
    return np.any(ge & gt, axis=1)


def brute_ranks(points: np.ndarray) -> np.ndarray:
    """Peel fronts one at a time with the O(n^2) dominance test."""
    ranks = np.full(len(points), -1)
    left = np.arange(len(points))
    layer = 0
    while len(left):
        front = ~brute_dominated(points[left])
        ranks[left[front]] = layer
        left = left[~front]
        layer += 1
    return ranks


def brute_hv_grid(points: np.ndarray, ref: np.ndarray) -> float:
    """Area of the union of boxes [ref, p] by summing the cells of the coordinate grid."""
    pts = points[(points > ref).all(axis=1)]
    if len(pts) == 0:
        return 0.0
    xs = np.unique(np.concatenate([[ref[0]], pts[:, 0]]))
    ys = np.unique(np.concatenate([[ref[1]], pts[:, 1]]))
    total = 0.0
    for x_lo, x_hi in itertools.pairwise(xs):
        for y_lo, y_hi in itertools.pairwise(ys):
            if np.any((pts[:, 0] >= x_hi) & (pts[:, 1] >= y_hi)):
                total += (x_hi - x_lo) * (y_hi - y_lo)
    return total


def brute_hv_inclusion_exclusion(points: np.ndarray, ref: np.ndarray) -> float:
    total = 0.0
    for size in range(1, len(points) + 1):
        for subset in itertools.combinations(range(len(points)), size):
            corner = points[list(subset)].min(axis=0)
            total += (-1) ** (size + 1) * float(np.prod(np.maximum(corner - ref, 0.0)))
    return total


def brute_igd_plus(front: np.ndarray, ref: np.ndarray) -> float:
    dists = []
    for z in ref:
        dists.append(
            min(
                math.sqrt(sum(max(zi - ai, 0.0) ** 2 for zi, ai in zip(z, a, strict=True)))
                for a in front
            )
        )
    return sum(dists) / len(dists)


def brute_epsilon(front: np.ndarray, ref: np.ndarray) -> float:
    return max(min(max(zi - ai for zi, ai in zip(z, a, strict=True)) for a in front) for z in ref)


# ---------------------------------------------------------------------- non-dominated mask


@pytest.mark.parametrize("maximize", ORIENTATIONS)
def test_mask_matches_brute_force_and_moocore(maximize: tuple[bool, bool]) -> None:
    for pts in random_sets(seed=1, count=120):
        ours = nondominated_mask(pts, maximize=maximize)
        assert ours.dtype == bool and ours.shape == (len(pts),)
        np.testing.assert_array_equal(ours, ~brute_dominated(oriented(pts, maximize)))
        ref = moocore.is_nondominated(pts, maximise=list(maximize), keep_weakly=True)
        np.testing.assert_array_equal(ours, ref)


def test_mask_matches_moocore_on_negated_points() -> None:
    for pts in random_sets(seed=2, count=60):
        np.testing.assert_array_equal(
            nondominated_mask(pts), moocore.is_nondominated(-pts, keep_weakly=True)
        )


def test_duplicates_and_ties() -> None:
    pts = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [1.0, 1.0], [2.0, 1.0], [0.0, 2.0]])
    # Copies of front points are all kept; (1, 1) is beaten by (1, 2) and (2, 1);
    # (0, 2) ties (1, 2) in y and loses in x, so it is dominated too.
    np.testing.assert_array_equal(nondominated_mask(pts), [True, True, True, False, True, False])
    np.testing.assert_array_equal(nondominated_ranks(pts), [0, 0, 0, 1, 0, 1])


def test_mask_of_empty_and_single_sets() -> None:
    assert nondominated_mask(np.empty((0, 2))).shape == (0,)
    assert nondominated_mask([]).shape == (0,)
    np.testing.assert_array_equal(nondominated_mask([[3.0, -1.0]]), [True])


def test_mask_accepts_lists_and_leaves_input_alone() -> None:
    pts = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.2, 0.2]])
    before = pts.copy()
    assert nondominated_mask(pts.tolist()).tolist() == [True, True, True, False]
    np.testing.assert_array_equal(pts, before)


# ---------------------------------------------------------------------------------- ranks


@pytest.mark.parametrize("maximize", ORIENTATIONS)
def test_ranks_match_brute_force_and_moocore(maximize: tuple[bool, bool]) -> None:
    for pts in random_sets(seed=3, count=120):
        ours = nondominated_ranks(pts, maximize=maximize)
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours, brute_ranks(oriented(pts, maximize)))
        np.testing.assert_array_equal(ours, moocore.pareto_rank(pts, maximise=list(maximize)))
        np.testing.assert_array_equal(ours == 0, nondominated_mask(pts, maximize=maximize))


def test_ranks_match_pymoo_non_dominated_sorting() -> None:
    from pymoo.util.dominator import Dominator
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    pure_python = NonDominatedSorting(dominator=Dominator())  # pymoo's own sort, not moocore
    default = NonDominatedSorting()
    for pts in random_sets(seed=4, count=60, max_n=30):
        ours = nondominated_ranks(pts)
        _, rank_pure = pure_python.do(-pts, return_rank=True)
        _, rank_default = default.do(-pts, return_rank=True)
        np.testing.assert_array_equal(ours, rank_pure)
        np.testing.assert_array_equal(ours, rank_default)


def test_ranks_with_many_layers_match_moocore() -> None:
    rng = np.random.default_rng(5)
    continuous = rng.random((3000, 2))
    tied = np.column_stack([np.round(rng.uniform(80, 95, 3000), 1), rng.integers(1, 60, 3000)])
    for pts in (continuous, tied):
        ours = nondominated_ranks(pts)
        assert ours.max() > 20  # many layers: the sweep places points deep down
        np.testing.assert_array_equal(ours, moocore.pareto_rank(-pts))


def test_every_layer_is_dominated_by_the_one_above() -> None:
    rng = np.random.default_rng(6)
    pts = rng.integers(0, 12, size=(300, 2)).astype(float)
    ranks = nondominated_ranks(pts)
    for k in range(1, ranks.max() + 1):
        upper, layer = pts[ranks == k - 1], pts[ranks == k]
        for p in layer:
            dominators = (upper >= p).all(axis=1) & (upper > p).any(axis=1)
            assert dominators.any()
        # and nothing in a layer dominates another member of it
        assert not brute_dominated(layer).any()


# ---------------------------------------------------------------------------- hypervolume


def test_hypervolume_matches_grid_and_inclusion_exclusion() -> None:
    rng = np.random.default_rng(7)
    for pts in random_sets(seed=8, count=100, max_n=12):
        ref = pts.min(axis=0) - rng.uniform(0, 1, 2)
        ref += rng.uniform(0, 0.5) * (pts.max(axis=0) - ref)  # some points below it
        ours = hypervolume_2d(pts, ref)
        assert ours == pytest.approx(brute_hv_grid(pts, ref), rel=1e-12, abs=1e-12)
        if len(pts) <= 8:
            exact = brute_hv_inclusion_exclusion(pts, ref)
            assert ours == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_hypervolume_matches_moocore_and_pymoo() -> None:
    from pymoo.indicators.hv import HV

    rng = np.random.default_rng(9)
    for pts in random_sets(seed=10, count=100):
        ref = pts.min(axis=0) + rng.uniform(-1, 0.3, 2) * np.ptp(pts, axis=0)
        ours = hypervolume_2d(pts, ref)
        assert ours == pytest.approx(moocore.hypervolume(-pts, ref=-ref), rel=1e-12, abs=1e-12)
        assert ours == pytest.approx(
            moocore.hypervolume(pts, ref=ref, maximise=True), rel=1e-12, abs=1e-12
        )
        assert ours == pytest.approx(HV(ref_point=-ref)(-pts), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("maximize", ORIENTATIONS)
def test_hypervolume_orientation(maximize: tuple[bool, bool]) -> None:
    for pts in random_sets(seed=11, count=30):
        worst = np.where(maximize, pts.min(axis=0) - 1, pts.max(axis=0) + 1)
        ours = hypervolume_2d(pts, worst, maximize=maximize)
        flipped = hypervolume_2d(oriented(pts, maximize), oriented(worst[None], maximize)[0])
        assert ours == pytest.approx(flipped, rel=1e-12)
        ref = moocore.hypervolume(pts, ref=worst, maximise=list(maximize))
        assert ours == pytest.approx(ref, rel=1e-12)


def test_hypervolume_published_example() -> None:
    # moocore's documented example: maximization with reference 0 gives 39.
    dat = np.array([[5.0, 5.0], [4.0, 6.0], [2.0, 7.0], [7.0, 4.0]])
    assert hypervolume_2d(dat, [0.0, 0.0]) == pytest.approx(39.0)


def test_points_not_strictly_better_than_the_reference_add_nothing() -> None:
    front = np.array([[3.0, 1.0], [1.0, 3.0]])
    base = hypervolume_2d(front, [0.0, 0.0])
    on_the_edge = np.vstack([front, [[5.0, 0.0], [0.0, 5.0], [-1.0, 9.0]]])
    assert hypervolume_2d(on_the_edge, [0.0, 0.0]) == base
    assert hypervolume_2d([[5.0, 0.0], [-2.0, 8.0]], [0.0, 0.0]) == 0.0
    assert hypervolume_2d(np.empty((0, 2)), [0.0, 0.0]) == 0.0


# ------------------------------------------------------------------------ IGD+ and epsilon


def test_igd_plus_and_epsilon_match_brute_force_and_moocore() -> None:
    rng = np.random.default_rng(12)
    sets = list(random_sets(seed=13, count=80, max_n=15))
    for front, ref in itertools.pairwise(sets):
        igd = igd_plus(front, ref)
        assert igd == pytest.approx(brute_igd_plus(front, ref), rel=1e-12, abs=1e-15)
        assert igd == pytest.approx(moocore.igd_plus(-front, ref=-ref), rel=1e-12, abs=1e-15)
        assert igd == pytest.approx(
            moocore.igd_plus(front, ref=ref, maximise=True), rel=1e-12, abs=1e-15
        )
        eps = additive_epsilon(front, ref)
        assert eps == pytest.approx(brute_epsilon(front, ref), rel=1e-12, abs=1e-15)
        assert eps == pytest.approx(moocore.epsilon_additive(-front, ref=-ref), rel=1e-12)
        assert eps == pytest.approx(
            moocore.epsilon_additive(front, ref=ref, maximise=True), rel=1e-12
        )
        maximize = (bool(rng.integers(2)), bool(rng.integers(2)))
        assert igd_plus(front, ref, maximize=maximize) == pytest.approx(
            moocore.igd_plus(front, ref=ref, maximise=list(maximize)), rel=1e-12, abs=1e-15
        )
        assert additive_epsilon(front, ref, maximize=maximize) == pytest.approx(
            moocore.epsilon_additive(front, ref=ref, maximise=list(maximize)), rel=1e-12
        )


def test_igd_plus_matches_pymoo_own_distance_code() -> None:
    from pymoo.indicators.igd_plus import IGDPlus

    sets = list(random_sets(seed=14, count=40, max_n=15))
    for front, ref in itertools.pairwise(sets):
        # norm_by_dist with a unit range runs pymoo's own modified distance, not moocore's.
        own = IGDPlus(-ref, norm_by_dist=True, ideal=np.zeros(2), nadir=np.ones(2))
        assert igd_plus(front, ref) == pytest.approx(own(-front), rel=1e-12, abs=1e-15)
        assert igd_plus(front, ref) == pytest.approx(IGDPlus(-ref)(-front), rel=1e-12, abs=1e-15)


def test_igd_plus_published_example() -> None:
    # Ishibuchi et al. (2015), example 4, as in moocore's documentation (minimization):
    # IGD+ ranks A ahead of B, where plain IGD gets it wrong.
    ref = np.array([[10, 0], [6, 1], [2, 2], [1, 6], [0, 10]], dtype=float)
    a = np.array([[4, 2], [3, 3], [2, 4]], dtype=float)
    b = np.array([[8, 2], [4, 4], [2, 8]], dtype=float)
    assert igd_plus(a, ref, maximize=False) == pytest.approx(1.482842712474619)
    assert igd_plus(b, ref, maximize=False) == pytest.approx(2.260112615949154)


def test_epsilon_published_example() -> None:
    # moocore's documented example (minimization): 2.5.
    dat = np.array([[3.5, 5.5], [3.6, 4.1], [4.1, 3.2], [5.5, 1.5]])
    ref = np.array([[1, 6], [2, 5], [3, 4], [4, 3], [5, 2], [6, 1]], dtype=float)
    assert additive_epsilon(dat, ref, maximize=False) == pytest.approx(2.5)


def test_epsilon_is_the_smallest_shift_that_covers_the_reference() -> None:
    for front, ref in itertools.pairwise(random_sets(seed=15, count=40, max_n=15)):
        eps = additive_epsilon(front, ref)
        slack = 1e-12  # front + (z - a) can round just below z
        covered = np.any(np.all(front[None] + eps + slack >= ref[:, None], axis=2), axis=1)
        assert covered.all()
        shrunk = np.any(np.all(front[None] + eps - 1e-9 >= ref[:, None], axis=2), axis=1)
        assert not shrunk.all()


def test_igd_plus_and_epsilon_of_a_front_against_itself() -> None:
    for pts in random_sets(seed=16, count=20):
        assert igd_plus(pts, pts) == 0.0
        assert additive_epsilon(pts, pts) == 0.0


def test_igd_plus_averages_over_the_reference_set() -> None:
    front = np.array([[1.0, 1.0]])
    ref = np.array([[2.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    assert igd_plus(front, ref) == pytest.approx(1.0 / 4)


def test_empty_front_is_infinitely_far() -> None:
    ref = np.array([[1.0, 2.0]])
    assert igd_plus(np.empty((0, 2)), ref) == math.inf
    assert additive_epsilon([], ref) == math.inf


def test_large_sets_are_processed_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    import nasfilter.pareto as pareto

    rng = np.random.default_rng(17)
    front, ref = rng.random((50, 2)), rng.random((70, 2))
    whole = igd_plus(front, ref), additive_epsilon(front, ref)
    monkeypatch.setattr(pareto, "_BLOCK_VALUES", 64)  # 64 values: one reference row a block
    assert (igd_plus(front, ref), additive_epsilon(front, ref)) == pytest.approx(whole)


# ---------------------------------------------------------------------------------- recall


def test_front_recall() -> None:
    assert front_recall([3, 5, 7, 9], [5, 9, 11, 12]) == 0.5
    assert front_recall([9, 9, 5], np.array([5, 9, 9])) == 1.0  # repeats do not count twice
    assert front_recall([], [1, 2]) == 0.0
    assert front_recall(np.array([1], dtype=np.uint16), [1, 2, 3, 4]) == 0.25


@pytest.mark.parametrize(
    ("found", "true", "match"),
    [
        ([1.5], [1], "front_indices"),
        ([1], [[1, 2]], "true_front_indices"),
        ([1], [], "true_front_indices is empty"),
    ],
)
def test_front_recall_bad_input(found: object, true: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        front_recall(found, true)


# ---------------------------------------------------------------------------- normalization


def table_like(seed: int, n: int = 2000) -> np.ndarray:
    """(n, 2): accuracy percent and throughput images/s, loosely anti-correlated."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(0, 1, n)
    acc = np.round(80 + 14 * size + rng.normal(0, 1.5, n), 2)
    throughput = np.round(2e5 * np.exp(-3 * size + rng.normal(0, 0.3, n)))
    return np.column_stack([acc, throughput])


def test_normalization_maps_ideal_to_one_and_reference_to_zero() -> None:
    pts = table_like(20)
    norm = Normalization.from_points(pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    np.testing.assert_array_equal(norm.ideal, hi)
    np.testing.assert_array_equal(norm.nadir, lo)
    span = hi - lo
    reference_in_units = lo - DEFAULT_MARGIN * span
    np.testing.assert_allclose(norm.lower, reference_in_units)
    z = norm.transform(np.vstack([hi, lo, reference_in_units]))
    np.testing.assert_allclose(z[0], [1.0, 1.0])
    np.testing.assert_allclose(z[1], DEFAULT_MARGIN / (1 + DEFAULT_MARGIN))
    np.testing.assert_allclose(z[2], [0.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(norm.reference, [0.0, 0.0])
    all_z = norm.transform(pts)
    assert all_z.min() >= DEFAULT_MARGIN / (1 + DEFAULT_MARGIN) - 1e-12
    assert all_z.max() <= 1 + 1e-12
    # Affine and increasing per objective: order and dominance are kept.
    np.testing.assert_array_equal(nondominated_mask(all_z), nondominated_mask(pts))


def test_normalization_of_a_minimized_objective() -> None:
    pts = table_like(21)
    pts[:, 1] = 1e6 / pts[:, 1]  # microseconds per image: lower is better
    norm = Normalization.from_points(pts, maximize=(True, False), margin=0.05)
    assert norm.ideal[1] == pts[:, 1].min() and norm.nadir[1] == pts[:, 1].max()
    z = norm.transform(pts)
    best = int(np.argmin(pts[:, 1]))
    assert z[best, 1] == pytest.approx(1.0)
    assert z[:, 1].min() == pytest.approx(0.05 / 1.05)
    np.testing.assert_array_equal(
        nondominated_mask(z), nondominated_mask(pts, maximize=(True, False))
    )


def test_normalization_keeps_its_own_copies() -> None:
    ideal, nadir = np.array([95.0, 2e5]), np.array([80.0, 1e3])
    norm = Normalization(ideal=ideal, nadir=nadir)
    ideal[0] = 0.0  # the caller's array stays writable and the normalization is unchanged
    assert norm.ideal[0] == 95.0
    with pytest.raises(ValueError):
        norm.ideal[0] = 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ideal": [1.0, 1.0], "nadir": [1.0, 0.0]}, "objective 0"),
        ({"ideal": [0.0, 1.0], "nadir": [1.0, 0.0]}, "objective 0"),
        ({"ideal": [1.0, 1.0], "nadir": [0.0]}, "nadir"),
        ({"ideal": [1.0, np.nan], "nadir": [0.0, 0.0]}, "ideal"),
        ({"ideal": [1.0, 1.0], "nadir": [0.0, 0.0], "margin": -0.1}, "margin"),
        ({"ideal": [1.0, 1.0], "nadir": [0.0, 0.0], "maximize": (True,)}, "maximize"),
    ],
)
def test_normalization_bad_input(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Normalization(**kwargs)  # type: ignore[arg-type]


def test_normalization_from_points_bad_input() -> None:
    with pytest.raises(ValueError, match="objective 1"):
        Normalization.from_points([[1.0, 5.0], [2.0, 5.0]])
    with pytest.raises(ValueError, match="all_points"):
        Normalization.from_points([[1.0, np.nan], [2.0, 5.0]])
    with pytest.raises(ValueError, match="all_points is empty"):
        Normalization.from_points(np.empty((0, 2)))


# --------------------------------------------------------------------------- compare_fronts


def true_front(pts: np.ndarray) -> np.ndarray:
    return pts[moocore.is_nondominated(-pts, keep_weakly=True)]


def test_compare_fronts_matches_moocore_on_normalized_points() -> None:
    rng = np.random.default_rng(22)
    for seed in range(5):
        table = table_like(30 + seed)
        front = true_front(table)
        run = table[rng.choice(len(table), size=60, replace=False)]
        metrics = compare_fronts(run, front, Normalization.from_points(table))

        lo, hi = table.min(axis=0), table.max(axis=0)
        origin = lo - 0.01 * (hi - lo)
        run_z, front_z = (run - origin) / (hi - origin), (front - origin) / (hi - origin)
        front_z = np.unique(front_z, axis=0)
        hv_ratio = moocore.hypervolume(-run_z, ref=[0.0, 0.0]) / moocore.hypervolume(
            -front_z, ref=[0.0, 0.0]
        )
        assert isinstance(metrics, FrontMetrics)
        assert metrics.hv_ratio == pytest.approx(hv_ratio, rel=1e-12)
        assert metrics.igd_plus == pytest.approx(moocore.igd_plus(-run_z, ref=-front_z), rel=1e-9)
        assert metrics.epsilon == pytest.approx(
            moocore.epsilon_additive(-run_z, ref=-front_z), rel=1e-9
        )
        assert metrics.n_points == 60
        assert 0 < metrics.hv_ratio < 1 and metrics.igd_plus > 0 and metrics.epsilon > 0


def test_compare_fronts_of_the_true_front_itself() -> None:
    table = table_like(23)
    front = true_front(table)
    metrics = compare_fronts(front, front, Normalization.from_points(table))
    assert metrics == FrontMetrics(hv_ratio=1.0, igd_plus=0.0, epsilon=0.0, n_points=len(front))
    # the whole table holds the true front: same figures
    whole = compare_fronts(table, front, Normalization.from_points(table))
    assert (whole.hv_ratio, whole.igd_plus, whole.epsilon) == (1.0, 0.0, 0.0)


def test_compare_fronts_ignores_dominated_and_repeated_true_rows() -> None:
    table = table_like(24)
    norm = Normalization.from_points(table)
    front = true_front(table)
    run = table[:40]
    padded = np.vstack([front, front[:3], table[100:140]])
    assert compare_fronts(run, padded, norm) == compare_fronts(run, front, norm)
    # and dominated run rows change nothing either
    run_front = true_front(run)
    same = compare_fronts(run_front, front, norm)
    assert compare_fronts(run, front, norm) == FrontMetrics(
        same.hv_ratio, same.igd_plus, same.epsilon, n_points=len(run)
    )


def test_compare_fronts_is_unit_free() -> None:
    table = table_like(25)
    front, run = true_front(table), table[:80]
    scale, shift = np.array([0.01, 1e-3]), np.array([-50.0, 7.0])  # fraction; kimages/s
    a = compare_fronts(run, front, Normalization.from_points(table))
    b = compare_fronts(
        run * scale + shift, front * scale + shift, Normalization.from_points(table * scale + shift)
    )
    assert b.hv_ratio == pytest.approx(a.hv_ratio, rel=1e-12)
    assert b.igd_plus == pytest.approx(a.igd_plus, rel=1e-9)
    assert b.epsilon == pytest.approx(a.epsilon, rel=1e-9)


def test_compare_fronts_improves_as_the_run_grows() -> None:
    table = table_like(26)
    norm = Normalization.from_points(table)
    front = true_front(table)
    rng = np.random.default_rng(27)
    order = rng.permutation(len(table))
    previous = compare_fronts(table[order[:1]], front, norm)
    for size in (10, 100, 500, 2000):
        current = compare_fronts(table[order[:size]], front, norm)
        assert current.hv_ratio >= previous.hv_ratio
        assert current.igd_plus <= previous.igd_plus
        assert current.epsilon <= previous.epsilon
        previous = current
    assert previous.hv_ratio == 1.0


def test_compare_fronts_empty_run() -> None:
    table = table_like(28)
    metrics = compare_fronts(np.empty((0, 2)), true_front(table), Normalization.from_points(table))
    assert metrics == FrontMetrics(hv_ratio=0.0, igd_plus=math.inf, epsilon=math.inf, n_points=0)


def test_compare_fronts_bad_input() -> None:
    table = table_like(29)
    norm = Normalization.from_points(table)
    with pytest.raises(ValueError, match="true_points is empty"):
        compare_fronts(table[:3], np.empty((0, 2)), norm)
    with pytest.raises(ValueError, match="run_points"):
        compare_fronts(table[:3, :1], table, norm)
    with pytest.raises(ValueError, match="true_points"):
        compare_fronts(table[:3], [[np.nan, 1.0]], norm)
    three = Normalization(ideal=np.ones(3), nadir=np.zeros(3), maximize=(True,) * 3)
    with pytest.raises(ValueError, match="2 objectives"):
        compare_fronts(table[:3], table, three)


# ------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("func", [nondominated_mask, nondominated_ranks])
@pytest.mark.parametrize(
    ("points", "match"),
    [
        (np.zeros((4, 3)), r"shape \(n, 2\)"),
        (np.zeros(4), r"shape \(n, 2\)"),
        (np.zeros((2, 2, 2)), r"shape \(n, 2\)"),
        ([[1.0, np.nan], [0.0, 0.0]], "row 0"),
        ([[1.0, 2.0], [0.0, -np.inf]], "row 1"),
        ([["a", "b"]], "numeric"),
    ],
)
def test_bad_points(func: Callable[..., object], points: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        func(points)


def test_bad_hypervolume_input() -> None:
    with pytest.raises(ValueError, match="reference"):
        hypervolume_2d([[1.0, 1.0]], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="reference"):
        hypervolume_2d([[1.0, 1.0]], [0.0, np.inf])
    with pytest.raises(ValueError, match="points"):
        hypervolume_2d([[1.0, np.inf]], [0.0, 0.0])
    with pytest.raises(ValueError, match="maximize"):
        hypervolume_2d([[1.0, 1.0]], [0.0, 0.0], maximize=(True,))
    with pytest.raises(ValueError, match="maximize"):
        nondominated_mask([[1.0, 1.0]], maximize=("yes", "no"))  # type: ignore[arg-type]


@pytest.mark.parametrize("func", [igd_plus, additive_epsilon])
def test_bad_indicator_input(func: Callable[..., float]) -> None:
    call = func
    with pytest.raises(ValueError, match="front has 3 objectives but reference_front has 2"):
        call(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="reference_front is empty"):
        call(np.zeros((2, 2)), np.empty((0, 2)))
    with pytest.raises(ValueError, match="reference_front holds a non-finite"):
        call(np.zeros((2, 2)), [[0.0, np.nan]])
    with pytest.raises(ValueError, match="front holds a non-finite"):
        call([[np.inf, 0.0]], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="maximize"):
        call(np.zeros((2, 2)), np.zeros((2, 2)), maximize=(True, True, True))
