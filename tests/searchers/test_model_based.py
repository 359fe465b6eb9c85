"""The model-based searcher: its hypervolume arithmetic, its ridge model, its repeat rule, its
fallback, its bad input, and that it finds a better front than random search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nasfilter.filters import DropAll
from nasfilter.pareto import hypervolume_2d, nondominated_mask
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.results import score_events
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import SEARCHERS, ModelBased, RandomSearch
from nasfilter.searchers.features import RidgeModel, base_features
from nasfilter.searchers.model_based import behind, front_height, hypervolume_gain
from nasfilter.testing.contracts import default_inputs


def _front(rng: np.random.Generator, n: int) -> np.ndarray:
    pts = rng.random((n, 2))
    return pts[nondominated_mask(pts)]


def test_hypervolume_gain_equals_the_difference_of_two_hypervolumes() -> None:
    rng = np.random.default_rng(3)
    for m in (0, 1, 5, 20):
        front = _front(rng, 40)[:m] if m else np.zeros((0, 2))
        front = front[nondominated_mask(front)] if m else front
        points = rng.random((50, 2)) * 1.2
        gain = hypervolume_gain(front, points)
        base = hypervolume_2d(front, [0.0, 0.0])
        for p, g in zip(points, gain, strict=True):
            with_p = hypervolume_2d(np.vstack([front, p]), [0.0, 0.0])
            assert g == pytest.approx(with_p - base, abs=1e-12)


def test_front_height_is_the_best_y_at_or_right_of_x() -> None:
    front = np.array([[0.2, 0.9], [0.5, 0.6], [0.9, 0.1]])
    x = np.array([0.0, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0])
    np.testing.assert_allclose(front_height(front, x, -1.0), [0.9, 0.9, 0.6, 0.6, 0.1, 0.1, -1.0])


def test_behind_is_zero_on_the_front_and_positive_below() -> None:
    front = np.array([[0.2, 0.9], [0.5, 0.6], [0.9, 0.1]])
    d = behind(front, np.array([[0.5, 0.6], [0.4, 0.5], [0.95, 0.95]]))
    assert d[0] == pytest.approx(0.0)
    assert d[1] == pytest.approx(0.1)  # shift both by 0.1 to reach (0.5, 0.6)
    assert d[2] < 0


def test_behind_matches_brute_force_in_linear_units() -> None:
    # max over front points q of min over coordinates of (q - p), written out; the points
    # span negative values too (standardized predictions), which no logarithm takes
    rng = np.random.default_rng(3)
    cloud = rng.normal(0.0, 2.0, size=(300, 2))
    dominated = [bool(np.any(np.all(cloud >= c, axis=1) & np.any(cloud > c, axis=1)))
                 for c in cloud]  # fmt: skip
    front = cloud[~np.array(dominated)]  # the non-dominated points, by brute force
    assert len(front) >= 5
    points = rng.normal(0.0, 3.0, size=(500, 2))
    brute = np.max(np.min(front[None, :, :] - points[:, None, :], axis=2), axis=1)
    np.testing.assert_allclose(behind(front, points), brute, rtol=0, atol=1e-12)
    assert np.all(np.isneginf(behind(np.empty((0, 2)), points)))


def test_ridge_recovers_a_linear_function_and_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 6))
    w = np.array([1.0, -2.0, 0.5, 0.0, 3.0, -1.0])
    y = x @ w + 7.0 + 0.01 * rng.standard_normal(200)
    model = RidgeModel.fit(x, y)
    # Independent reference: the ridge normal equations solved by numpy.
    xc, yc = x - x.mean(axis=0), y - y.mean()
    ref = np.linalg.solve(xc.T @ xc + model.penalty * np.eye(6), xc.T @ yc)
    np.testing.assert_allclose(model.weights, ref, atol=1e-9)
    np.testing.assert_allclose(model.weights, w, atol=0.01)
    assert model.noise_sd == pytest.approx(0.01, rel=0.3)
    sd = model.sd(x[:5])
    assert np.all(sd > 0) and np.all(sd < 0.01)


def test_ridge_refuses_too_few_or_non_finite_observations() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        RidgeModel.fit(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        RidgeModel.fit(np.zeros((4, 3)), np.array([1.0, np.nan, 2.0, 3.0]))


def test_base_features_are_standardized_and_cover_every_architecture() -> None:
    x = base_features()
    assert x.shape == (32768, 57) and not x.flags.writeable
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-9)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"beta": -1.0}, r"beta \(valid range: \[0, 10\]\)"),
        ({"batch": 0}, r"batch \(valid range: \[1, 32768\]\)"),
        ({"init": 2}, r"init \(valid range: \[3, 32768\]\)"),
        ({"explore": 1.5}, r"explore \(valid range: \[0, 1\]\)"),
        ({"acquisition": "ucb"}, "acquisition must be one of"),
        ({"hardware": "yes"}, "hardware must be True or False"),
    ],
)
def test_bad_parameters_name_their_valid_range(params: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ModelBased(**params)  # type: ignore[arg-type]


def _inputs() -> tuple[object, object]:
    return default_inputs()  # the synthetic table and the roofline proxy, once per process


@pytest.mark.parametrize(
    "hardware", [False, pytest.param(True, marks=pytest.mark.slow)]  # the same rule, more columns
)
def test_it_never_proposes_an_architecture_twice(hardware: bool) -> None:
    table, proxy = _inputs()
    problem = make_problem(table, 30_000, seed=4, proxy=proxy)  # type: ignore[arg-type]
    result = run_search(ModelBased(hardware=hardware), problem)
    assert result.n_evaluations > 100
    assert len(np.unique(result.evaluated)) == len(result.evaluated)


def test_too_few_evaluations_fall_back_to_the_exploratory_rule() -> None:
    table, proxy = _inputs()
    searcher = ModelBased(init=3, init_proxy=0)
    problem = make_problem(table, 5_000, seed=0, proxy=proxy)  # type: ignore[arg-type]
    result = run_search(searcher, problem, filter=DropAll(), max_idle=40)
    assert result.status == "stalled" and result.n_evaluations == 0
    assert searcher.fallbacks >= 30  # no evaluation, no fit: the stratified rule chose


def test_a_failing_fit_falls_back_instead_of_crashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> RidgeModel:
        raise np.linalg.LinAlgError("eigh did not converge")

    monkeypatch.setattr(RidgeModel, "fit", staticmethod(broken))
    table, proxy = _inputs()
    searcher = ModelBased()
    problem = make_problem(table, 10_000, seed=1, proxy=proxy)  # type: ignore[arg-type]
    result = run_search(searcher, problem)
    assert result.status == "budget" and result.n_evaluations > 50
    assert searcher.fallbacks > 10


@pytest.mark.slow
def test_it_beats_random_search_on_the_embedded_table() -> None:
    table, proxy = _inputs()
    reference = FrontReference.build(table, proxy)  # type: ignore[arg-type]
    scores = {}
    for name, factory in (("model", ModelBased), ("random", RandomSearch)):
        hv = []
        for seed in (0, 1):
            problem = make_problem(table, 40_000, seed, proxy=proxy)  # type: ignore[arg-type]
            result = run_search(factory(), problem)
            metrics, _ = score_events(reference, table, result.events, np.array([40_000.0]))  # type: ignore[arg-type]
            hv.append(metrics["hv_ratio"])
        scores[name] = min(hv) if name == "model" else max(hv)
    assert scores["model"] > scores["random"] + 0.01


def test_both_feature_sets_are_registered() -> None:
    assert SEARCHERS.create("model-based").config()["hardware"] is False
    assert SEARCHERS.create("model-based-hw").config()["hardware"] is True


def test_runs_are_deterministic_per_seed() -> None:
    table, proxy = _inputs()
    traces = []
    for _ in range(2):
        problem = make_problem(table, 8_000, seed=5, proxy=proxy)  # type: ignore[arg-type]
        traces.append(run_search(ModelBased(), problem).events["index"])
    assert np.array_equal(*traces)
    assert list(itertools.islice(traces[0], 3))  # it did something


@pytest.mark.parametrize(
    "params",
    [
        {"acquisition": "layers", "explore": 0.2},
        {"calibrate": True, "beta": 1.0, "cost_power": 1.0},
    ],
)
def test_the_other_settings_run_without_repeats(params: dict[str, object]) -> None:
    table, proxy = _inputs()
    problem = make_problem(table, 15_000, seed=2, proxy=proxy)  # type: ignore[arg-type]
    searcher = ModelBased(**params)  # type: ignore[arg-type]
    result = run_search(searcher, problem)
    assert result.n_evaluations > 100 and searcher.fallbacks == 0
    assert len(np.unique(result.evaluated)) == len(result.evaluated)


@pytest.mark.parametrize(
    "name",
    [
        "model-based",
        pytest.param("model-based-hw", marks=pytest.mark.slow),  # model-based's path, slower
        "optuna-nsga2",
        pytest.param("optuna-tpe", marks=pytest.mark.slow),  # the golden traces' K=4 run it
        "optuna-random",
    ],
)
def test_native_trial_searchers_run_four_workers_deterministically(name: str) -> None:
    """Ported onto propose/observe: no legacy adapter (no FutureWarning), and two runs of
    one seed with four simulated workers give the same trace."""
    import warnings

    if name.startswith("optuna"):
        pytest.importorskip("optuna")
    table, proxy = _inputs()
    traces = []
    for _ in range(2):
        problem = make_problem(table, 6_000, seed=3, proxy=proxy)  # type: ignore[arg-type]
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            result = run_search(SEARCHERS.create(name), problem, workers=4)
        assert result.workers == 4 and result.n_evaluations > 5
        traces.append((result.events["index"].tolist(), result.events["worker"].tolist()))
    assert traces[0] == traces[1]
