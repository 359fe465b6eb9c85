"""Model-based multi-fidelity search: the screening decision on hand-computed examples, and
runs on curves whose partial accuracy is perfectly informative or pure noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nasfilter.bench.surrogate import embedded_table
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import ModelBasedMF, make_searcher
from nasfilter.searchers.accuracy_model import fit_accuracy
from nasfilter.searchers.screening import (
    ScreenLink,
    expected_improvement,
    promote,
    screen_rates,
)
from nasfilter.sim.problem import Budget
from nasfilter.testing.contracts import default_inputs

TABLE = embedded_table("cifar10")


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def test_expected_improvement_matches_the_closed_form() -> None:
    ei = expected_improvement(np.array([70.0, 68.0, 72.0]), np.array([1.0, 1.0, 2.0]),
                              np.array([70.0, 70.0, 70.0]))
    # sd phi(z) + (mu - h) Phi(z), z = (mu - h) / sd
    want = [_phi(0.0), _phi(-2.0) - 2 * _cdf(-2.0), 2 * _phi(1.0) + 2 * _cdf(1.0)]
    assert ei == pytest.approx(want, rel=1e-9)


def test_screen_link_fits_the_hand_example() -> None:
    # y = 2 + 0.5 mu + r, r orthogonal to (1, mu): a = 2, b = 0.5, sd_y = sqrt(4 / 2)
    screens = np.array([[0, 3.0], [1, 1.5], [2, 2.0], [3, 4.5]])
    # pairs: e_y = (1, -1, -1, 1), F = 1 + 2 mu + 3 e_y + eta, eta = (1, 1, -1, -1)
    # orthogonal to (1, mu, e_y): c = 3, sd_post = sqrt(4 / (4 - 3))
    pairs = np.array([[0, 3.0, 5.0], [1, 1.5, 1.0], [0, 1.0, -3.0], [1, 3.5, 5.0]])
    link = ScreenLink.fit(screens, pairs, cost_ratio=0.25)
    assert link is not None
    assert (link.a, link.b, link.sd_y) == pytest.approx((2.0, 0.5, math.sqrt(2)))
    assert (link.c, link.sd_post) == pytest.approx((3.0, 2.0))
    # r^2 = 9 * 2 / (9 * 2 + 4) = 9/11; adjusted on 4 pairs: 1 - (2/11) 3 / 1 = 5/11
    assert link.explained == pytest.approx(5 / 11)
    # prior N(0, 3^2), y = 3: z = 1 / sqrt 2, m = sqrt(5/11) 3 z, sd = 3 sqrt(6/11)
    m, sd = link.posterior(0.0, 3.0, 3.0)
    assert (m, sd) == pytest.approx((math.sqrt(5 / 11) * 3 / math.sqrt(2), 3 * math.sqrt(6 / 11)))


def test_screen_link_sums_match_least_squares_on_the_rows() -> None:
    rng = np.random.default_rng(4)
    mu = 85.0 + rng.normal(size=60)
    y = 40.0 + 0.5 * mu + rng.normal(size=60)
    f = 10.0 + 0.9 * mu + 0.3 * (y - 0.5 * mu) + 0.2 * rng.normal(size=60)
    link = ScreenLink.fit(np.stack([mu, y], 1), np.stack([mu, y, f], 1)[::3], 0.1)
    assert link is not None
    # independent reference: numpy's least squares on the explicit designs
    b, a = np.polyfit(mu, y, 1)
    e = (y - a - b * mu)[::3]
    design = np.stack([np.ones(20), mu[::3], e], 1)
    coef, rss, *_ = np.linalg.lstsq(design, f[::3], rcond=None)
    assert (link.a, link.b) == pytest.approx((a, b), rel=1e-9)
    assert link.sd_y == pytest.approx(np.std(y - a - b * mu) * math.sqrt(60 / 58), rel=1e-9)
    assert link.c == pytest.approx(coef[2], rel=1e-8)
    assert link.sd_post == pytest.approx(math.sqrt(rss[0] / 17), rel=1e-8)


def test_screen_link_needs_three_screens_and_four_pairs() -> None:
    screens = np.array([[0, 3.0], [1, 1.5], [2, 2.0]])
    assert ScreenLink.fit(screens[:2], np.zeros((3, 3)), 0.25) is None
    assert ScreenLink.fit(screens, np.zeros((3, 3)), 0.25) is None


def test_an_uninformative_screen_never_pays() -> None:
    link = ScreenLink(a=0.0, b=0.0, sd_y=1.0, c=0.0, sd_post=1.0, cost_ratio=0.25)
    mu, sd, h, cost = (np.array([v, v + 1]) for v in (70.0, 1.0, 70.0, 100.0))
    full, screen = screen_rates(link, mu, sd, h, cost)
    # every outcome alike: the best is to promote all, EI / (1.25 C)
    assert screen == pytest.approx(full / 1.25)


def test_an_informative_screen_pays_for_the_unlikely_candidate_only() -> None:
    link = ScreenLink(a=0.0, b=1.0, sd_y=1.0, c=1.0, sd_post=1e-6, cost_ratio=0.25)
    mu, sd, h, cost = np.array([68.0, 72.0]), np.ones(2), np.full(2, 70.0), np.full(2, 100.0)
    full, screen = screen_rates(link, mu, sd, h, cost)
    # unlikely (mu = h - 2 sd): promoted only when F > h, with probability Phi(-2), so the
    # rate is about EI / ((0.25 + Phi(-2)) C), not EI / C (24 quadrature nodes resolve the
    # tail above h coarsely: within 15 %)
    ei = _phi(2.0) - 2 * _cdf(-2.0)
    assert full[0] == pytest.approx(ei / 100)
    assert screen[0] == pytest.approx(ei / ((0.25 + _cdf(-2.0)) * 100), rel=0.15)
    assert screen[0] > 3 * full[0]
    # likely (mu = h + 2 sd): almost always promoted, so the screen only adds its cost
    assert screen[1] < full[1]
    # after the screen: promoted when the partial accuracy puts it above the front
    assert promote(link, (68.0, 1.0, 70.0, 100.0), 70.5, float(screen[0]))
    assert not promote(link, (68.0, 1.0, 70.0, 100.0), 69.0, float(screen[0]))


class _Curves:
    """Curves of the embedded table whose partial accuracy is the final one (``exact``) or
    seeded noise around 50 %; charged as NATS-Bench charges (epochs x train + valid)."""

    dataset = "cifar10"
    synthetic = True

    def __init__(self, exact: bool) -> None:
        self.exact = exact

    def hps(self) -> list[str]:
        return ["12"]

    def epochs(self, hp: str) -> int:
        return 12

    def seeds(self, index: int, hp: str) -> list[int]:
        return [777, 888, 999]

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        k = [777, 888, 999].index(seed)
        acc = float(TABLE.valid_acc[index, k])
        if not self.exact and iepoch < 11:
            acc = 50.0 + 5.0 * np.random.default_rng([index, seed, iepoch]).standard_normal()
        cost = float(TABLE.train_time[index]) * (iepoch + 1) + float(TABLE.valid_time[index])
        return acc, cost


def _run(exact: bool, budget: float = 16_000.0) -> ModelBasedMF:
    searcher = ModelBasedMF()
    problem = make_problem(TABLE, Budget(budget), 3, curves=_Curves(exact),
                           proxy=default_inputs()[1])
    run_search(searcher, problem)
    return searcher


def test_significance_is_students_t_on_the_pairs() -> None:
    # r^2 = 1 / (1 + 1) = 0.5: t = sqrt(0.5 df / 0.5) = sqrt(df)
    link = ScreenLink(a=0.0, b=0.0, sd_y=1.0, c=1.0, sd_post=1.0, cost_ratio=0.1, n_pairs=10)
    assert link.significant()  # t = sqrt(7) = 2.646 > t(0.975, 7) = 2.365 (tables)
    few = ScreenLink(a=0.0, b=0.0, sd_y=1.0, c=-1.0, sd_post=1.0, cost_ratio=0.1, n_pairs=6)
    assert not few.significant()  # t = sqrt(3) = 1.732 < t(0.975, 3) = 3.182
    assert few.significant(level=0.2)  # t(0.9, 3) = 1.638 (tables)


@pytest.mark.slow
def test_noise_screens_stop_after_calibration() -> None:
    searcher = _run(exact=False)
    # 10 calibration screens at 1 epoch, all promoted; they say nothing, so the costlier
    # 4-epoch fidelity is never calibrated, and no screen follows
    assert searcher.screens == 10
    assert searcher.promoted == 10
    assert [len(f.pairs) for f in searcher._fids] == [10, 0]
    # its incrementally grown model is model-based's, fitted from the rows, up to rounding
    fit, _ = searcher._fit()
    want = fit_accuracy(searcher._design(), searcher._obs_index, searcher._obs_acc, False)
    np.testing.assert_allclose(fit.mean, want.mean, rtol=1e-9)
    np.testing.assert_array_equal(fit.evaluated, want.evaluated)


@pytest.mark.slow
def test_exact_screens_are_kept_and_drop_candidates() -> None:
    searcher = _run(exact=True)
    assert searcher.screens > 40
    assert searcher.promoted < searcher.screens  # some screened candidates were dropped
    assert [len(f.pairs) >= 10 for f in searcher._fids] == [True, True]  # both calibrated


def test_bad_schedule_and_calibration_are_refused() -> None:
    with pytest.raises(ValueError, match="calibration"):
        ModelBasedMF(calibration=2)
    with pytest.raises(ValueError, match="eta"):
        ModelBasedMF(eta=1)
    with pytest.raises(ValueError, match="min_epochs"):
        make_searcher("model-based-mf[min_epochs=5,max_epochs=4]")
