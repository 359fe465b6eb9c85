"""Runs and experiments: purity, 1 vs N workers, resume after a killed worker, stop
conditions, seeds, bad input before any run, and the metrics against brute force."""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import Arch
from nasfilter.filters import DropAll
from nasfilter.runs.experiment import (
    RunSpec,
    WorkerDied,
    check_seeds,
    grid,
    inputs,
    run_experiment,
    run_grids,
    run_one,
    start_pool,
)
from nasfilter.runs.metrics import FrontReference, score
from nasfilter.runs.results import load_results, score_events, tick_times
from nasfilter.runs.runner import make_problem, run_search, seed_streams
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.searchers import RandomSearch, Reinforce, UtilizationPareto
from nasfilter.sim.problem import EVALUATE, PROXY, Budget
from nasfilter.sim.trial import Trial

KILL_MARKER = "NASFILTER_TEST_KILL_MARKER"


class Killer(RandomSearch):
    """Kills its own worker process once, while the marker file exists."""

    name = "killer"

    def propose(self) -> Arch | None:
        marker = os.environ.get(KILL_MARKER)
        if marker and multiprocessing.parent_process() is not None:
            try:
                os.remove(marker)
            except FileNotFoundError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return super().propose()


def small_grid(**kw: object) -> list[RunSpec]:
    return grid(
        ["random", "reinforce-mnas", "utilization-pareto"],
        ["none", "proxy-threshold"],
        budget=70_000.0,
        n_ticks=20,
        **kw,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------- runner
def test_seed_streams_are_independent_and_reproducible() -> None:
    a, b = seed_streams(5), seed_streams(5)
    draws = [g.integers(1 << 62, size=4).tolist() for g in a]
    assert draws == [g.integers(1 << 62, size=4).tolist() for g in b]
    assert len({tuple(d) for d in draws}) == 3
    ss = np.random.SeedSequence(5)
    assert seed_streams(ss).searcher.random() == seed_streams(ss).searcher.random()
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        seed_streams(-1)


def test_a_run_never_outlives_its_budget_and_reports_proxy_time_apart() -> None:
    table, proxy, _ = inputs(RunSpec("random"))
    problem = make_problem(table, 110_000, 0, proxy=proxy)
    result = run_search(Reinforce(reward="mnas"), problem)
    ev = result.events
    assert result.status == "budget"
    assert np.all(ev["worker_seconds"] - ev["cost"] < 110_000) and result.clock >= 110_000
    is_proxy = ev["kind"] == PROXY
    assert result.proxy_seconds == pytest.approx(ev["cost"][is_proxy].sum())
    assert result.evaluation_seconds == pytest.approx(ev["cost"][ev["kind"] == EVALUATE].sum())
    assert result.proxy_seconds + result.evaluation_seconds == pytest.approx(result.clock)
    assert result.proxy_seconds > 0 and result.n_proxy == is_proxy.sum()
    # REINFORCE returns the architecture with the best reward seen (NATS-Bench reference):
    # recompute the MnasNet reward from the events alone.
    is_eval = ev["kind"] == EVALUATE
    evaluated = ev["index"][is_eval]
    accuracy = ev["accuracy"][is_eval]
    throughput = dict(zip(ev["index"][is_proxy].tolist(), ev["throughput"][is_proxy], strict=True))
    reward = accuracy * (np.array([throughput[i] for i in evaluated]) / 175_000.0) ** 0.07
    assert result.best_index == evaluated[int(np.argmax(reward))]
    assert result.best_valid_acc == accuracy[evaluated == result.best_index].max()
    plain = run_search(Reinforce(), make_problem(table, 110_000, 0))
    plain_eval = plain.events["kind"] == EVALUATE
    plain_acc = plain.events["accuracy"][plain_eval]
    assert plain.best_valid_acc == plain_acc.max()
    assert plain.best_index == plain.events["index"][plain_eval][int(np.argmax(plain_acc))]


def test_stop_conditions_are_recorded() -> None:
    table, proxy, _ = inputs(RunSpec("random"))
    stalled = run_search(
        RandomSearch(),
        make_problem(table, 1e6, 0, proxy=proxy),
        filter=DropAll(),
        max_idle=50,
    )
    assert stalled.status == "stalled" and stalled.n_asked == 50 and stalled.clock == 0
    done = run_search(UtilizationPareto(), make_problem(table, 1e6, 0, proxy=proxy))
    assert done.status == "searcher-done" and done.n_evaluations > 0
    with pytest.raises(ValueError, match="max_idle must be an integer >= 1"):
        run_search(RandomSearch(), make_problem(table, 1e6, 0), max_idle=0)
    for bad in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="workers must be an integer from 1 to 4096"):
            run_search(RandomSearch(), make_problem(table, 1e6, 0), workers=bad)


def test_the_study_budget_covers_a_full_scan_and_the_whole_front() -> None:
    spec = RunSpec("utilization-pareto")
    record = run_one(spec, 0)
    assert record.status == "searcher-done"  # the front ran out, not the budget
    assert record.summary["proxy_seconds"] == 2.0 * 32768
    assert record.summary["clock"] < spec.budget.seconds


# --------------------------------------------------------------------------- experiment
def test_run_one_is_a_pure_function_of_spec_and_seed() -> None:
    spec = RunSpec("reinforce-mnas", "proxy-threshold", budget=70_000.0, n_ticks=10)
    a, b, c = run_one(spec, 1), run_one(spec, 1), run_one(spec, 2)
    assert a.same_results(b)
    assert not a.same_results(c)


@pytest.mark.slow
@pytest.mark.subprocess
def test_one_and_two_workers_give_identical_results(tmp_path: Path) -> None:
    specs = small_grid()
    one = run_experiment(specs, [0, 1], jobs=1)
    two = run_experiment(specs, [0, 1], jobs=2)
    assert len(one) == len(two) == len(specs) * 2
    assert all(x.same_results(y) for x, y in zip(one, two, strict=True))
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        run_experiment(specs[:2], [0, 1], store=a, jobs=1)
        run_experiment(specs[:2], [0, 1], store=b, jobs=2)
        ra, rb = load_results(a), load_results(b)
        assert [r.row() for r in ra] == [r.row() for r in rb]
        for x, y in zip(ra, rb, strict=True):
            assert all(np.array_equal(x.curves[k], y.curves[k], equal_nan=True) for k in x.curves)
            ea, eb = a.events(x.run_id), b.events(y.run_id)
            assert all(np.array_equal(ea[k], eb[k], equal_nan=ea[k].dtype.kind == "f") for k in ea)


@pytest.mark.slow
@pytest.mark.subprocess
def test_resume_after_a_killed_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "kill-once"
    marker.touch()
    monkeypatch.setenv(KILL_MARKER, str(marker))
    specs = grid(["random", "tests.runs.test_experiment:Killer"], budget=30_000.0, n_ticks=5)
    seeds = [0, 1, 2]
    db = tmp_path / "r.db"
    with Store(db) as store, pytest.raises(WorkerDied, match="run the same command again"):
        run_experiment(specs, seeds, store=store, jobs=2)
    assert not marker.exists()
    with Store(db) as store:
        partial = [r.row() for r in load_results(store)]
        assert len(partial) < len(specs) * len(seeds)
        for row in partial:  # every stored run is complete
            assert len(store.events(row["run_id"])["index"]) > 0
        resumed = run_experiment(specs, seeds, store=store, jobs=2)
        assert len(resumed) == len(specs) * len(seeds) - len(partial)
        final = [r.row() for r in load_results(store)]
        assert sorted((r["searcher"], r["seed"]) for r in final) == sorted(
            (s.searcher, seed) for s in specs for seed in seeds
        )
        assert final[: len(partial)] == partial  # nothing lost or rewritten
        fresh = run_experiment(specs, seeds, jobs=1)
        by_key = {(r.spec.searcher, r.seed): r.metrics["hv_ratio"] for r in fresh}
        for row in final:
            assert row["hv_ratio"] == pytest.approx(by_key[(row["searcher"], row["seed"])])


def test_bad_input_fails_before_any_run(tmp_path: Path) -> None:
    cases = [
        (lambda: grid(["evolution[population_size=-1]"]), "population_size must be"),
        (lambda: grid(["reinforce[lr=0]"]), "lr must be > 0"),
        (lambda: grid(["reinforce-mnas"], filters=[]), "filters must be a non-empty"),
        (lambda: grid(["random"], budget=0), "budget seconds must be finite and > 0"),
        (lambda: grid(["random"], budget=-5.0), "budget seconds must be finite and > 0"),
        (lambda: grid(["nope"]), "unknown searcher 'nope'; known searchers: asha, .*evolution"),
        (lambda: grid(["random"], ["nope"]), "unknown filter 'nope'; known filters: drop-all"),
        (lambda: check_seeds([]), "seed list is empty"),
        (lambda: check_seeds([-1]), "seeds must be integers >= 0"),
        (lambda: run_experiment([RunSpec("random")], []), "seed list is empty"),
        (lambda: run_experiment([RunSpec("random")], [0], jobs=0), "jobs must be"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(ValueError, match="w must be finite"):
        Reinforce(w=math.nan)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------ metrics
def brute_front(points: np.ndarray) -> np.ndarray:
    """Maximized non-dominated rows by an O(n^2) comparison."""
    ge = (points[:, None, :] >= points[None, :, :]).all(axis=2)
    gt = (points[:, None, :] > points[None, :, :]).any(axis=2)
    dominated = (ge & gt).any(axis=0)
    return np.flatnonzero(~dominated)


def test_metrics_agree_with_brute_force_and_moocore() -> None:
    import moocore

    spec = RunSpec("random", budget=30_000.0)
    table, proxy, ref = inputs(spec)
    record = run_one(spec, 3)
    idx = record.events["index"][record.events["kind"] == EVALUATE]
    uniq = np.unique(idx)
    pts = np.stack([table.test_acc[uniq], np.log10(proxy.throughput[uniq])], axis=1)
    front = uniq[brute_front(pts)]
    assert record.metrics["front_size"] == len(front)
    assert record.metrics["best_acc"] == table.test_acc[idx].max()
    true = np.flatnonzero(
        moocore.is_nondominated(
            np.stack([table.test_acc, np.log10(proxy.throughput)], axis=1), maximise=True
        )
    )
    assert sorted(ref.true_front.tolist()) == sorted(true.tolist())
    assert record.metrics["recall"] == pytest.approx(np.isin(true, idx).mean())
    # Hypervolume in the documented normalized space, by moocore (minimization of -scores).
    lo = ref.norm.lower
    hi = ref.norm.ideal

    def scaled(p: np.ndarray) -> np.ndarray:
        return (p - lo) / (hi - lo)

    run_pts = scaled(np.stack([table.test_acc[front], np.log10(proxy.throughput[front])], 1))
    true_pts = scaled(ref.points[true])
    hv = moocore.hypervolume(-run_pts, ref=[0.0, 0.0]) / moocore.hypervolume(-true_pts, ref=[0, 0])
    assert record.metrics["hv_ratio"] == pytest.approx(hv, rel=1e-12)
    eps = moocore.epsilon_additive(-run_pts, ref=-true_pts)
    assert record.metrics["epsilon"] == pytest.approx(eps, rel=1e-12)
    igd = moocore.igd_plus(-run_pts, ref=-true_pts)
    assert record.metrics["igd_plus"] == pytest.approx(igd, rel=1e-12)


def test_metric_curves_equal_scores_of_each_prefix() -> None:
    spec = RunSpec("evolution", budget=40_000.0)
    table, _, ref = inputs(spec)
    record = run_one(spec, 0)
    ev = record.events
    times = tick_times(spec.budget.seconds, 7)
    final, curves = score_events(ref, table, ev, times)
    is_eval = ev["kind"] == EVALUATE
    for i, t in enumerate(times):
        done = is_eval & (ev["end"] <= t)
        m = score(ref, ev["index"][done], ev["accuracy"][done], table)
        assert curves["hv_ratio"][i] == pytest.approx(m.hv_ratio)
        assert curves["recall"][i] == pytest.approx(m.recall)
        assert curves["selected_acc"][i] == pytest.approx(m.selected_acc)
        assert curves["n_evaluations"][i] == done.sum()
    assert np.all(np.diff(curves["hv_ratio"]) >= 0)
    assert final["hv_ratio"] >= curves["hv_ratio"][-1]
    _, empty = score_events(ref, table, {k: v[:0] for k, v in ev.items()}, times)
    assert np.all(empty["hv_ratio"] == 0) and np.all(np.isinf(empty["igd_plus"]))


def test_front_reference_is_the_table_front() -> None:
    table, proxy, _ = inputs(RunSpec("random"))
    ref = FrontReference.build(table, proxy)
    pts = np.stack([table.test_acc, np.log10(proxy.throughput)], axis=1)
    top = pts[ref.true_front]
    # nothing in the table dominates a front member
    for p in top[:10]:
        assert not np.any((pts >= p).all(axis=1) & (pts > p).any(axis=1))
    assert ref.norm.transform(pts).max() == pytest.approx(1.0)


def test_a_recommendation_must_have_been_evaluated() -> None:
    class RecommendsAnother(RandomSearch):
        def recommend(self) -> Arch | None:
            return Arch.from_index(min(set(range(len(seen) + 1)) - seen))  # never evaluated

        def observe(self, trial: Trial, accuracy: float | None) -> None:
            seen.add(trial.arch.index)

    seen: set[int] = set()
    table, _, _ = inputs(RunSpec("random"))
    with pytest.raises(ValueError, match="which this run did not evaluate"):
        run_search(RecommendsAnother(), make_problem(table, 500, 0))


# ------------------------------------------------------------------- parallel workers
@pytest.mark.slow
def test_k_workers_run_every_builtin_deterministically() -> None:
    """Every built-in searcher and filter at K=4: the same trace twice, each trial told
    once, never more than K evaluations at once, and the worker-seconds budget respected."""
    from nasfilter.filters import FILTERS
    from nasfilter.searchers import SEARCHERS

    table, proxy, _ = inputs(RunSpec("random"))
    # The model-based and Optuna peers take seconds a run (TPE about a minute at this
    # budget): tests/searchers/test_model_based.py runs them at K=4 twice on a smaller budget, and
    # the contract suite checks their pending trials.
    peers = ("model-based", "optuna-")
    for s_name in (s for s in SEARCHERS.names() if not s.startswith(peers)):
        # the real table has no learning curves: the multi-fidelity searchers run at K = 4
        # on the embedded table's in tests/cli/test_cli_multifidelity.py and the contract suite
        if getattr(SEARCHERS.create(s_name), "uses_fidelities", False):
            continue
        for f_name in FILTERS.names():
            if table.space.name not in FILTERS.create(f_name).spaces:
                continue  # a filter of another space only
            if f_name == "zerocost-frontiers":
                continue  # no zero-cost scores for this table: tests/filters/ runs it
            runs = [
                run_search(
                    SEARCHERS.create(s_name),
                    make_problem(table, 80_000.0, 1, proxy=proxy),
                    filter=FILTERS.create(f_name),
                    workers=4,
                    max_idle=500,
                )
                for _ in range(2)
            ]
            a, b = (r.events for r in runs)
            same = all(np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)
            assert same, (s_name, f_name)
            ev = a
            is_eval = ev["kind"] == EVALUATE
            starts, ends = ev["start"][is_eval], ev["end"][is_eval]
            for t in starts:  # evaluations running at each start, itself included
                assert ((starts <= t) & (ends > t)).sum() <= 4
            assert np.all((ev["worker_seconds"] - ev["cost"])[is_eval] < 80_000.0)
            trials = ev["trial"][is_eval]
            assert len(np.unique(trials)) == len(trials)
            assert set(ev["worker"][is_eval].tolist()) <= {0, 1, 2, 3}


def test_more_workers_spend_the_same_worker_seconds_in_less_wall_time() -> None:
    table, _, _ = inputs(RunSpec("random"))
    one = run_search(RandomSearch(), make_problem(table, 50_000.0, 0))
    four = run_search(RandomSearch(), make_problem(table, 50_000.0, 0), workers=4)
    # Random search ignores outcomes: K only changes when each proposal runs.
    n = min(one.n_evaluations, four.n_evaluations)
    assert np.array_equal(one.evaluated[:n], four.evaluated[:n])
    assert one.worker_seconds >= 50_000.0 and four.worker_seconds >= 50_000.0
    assert one.clock == one.worker_seconds
    assert four.clock < one.clock / 3  # four evaluations at a time
    # A wall-clock budget gives K workers about K times the work.
    wall = run_search(
        RandomSearch(),
        make_problem(table, Budget(20_000.0, clock="wall"), 0),
        workers=4,
    )
    assert wall.clock >= 20_000.0 and wall.worker_seconds > 3 * 20_000.0


@pytest.mark.slow
@pytest.mark.subprocess
def test_run_experiment_with_workers_is_independent_of_processes() -> None:
    specs = grid(["reinforce", "evolution"], budget=30_000.0, n_ticks=5, workers=4)
    one = run_experiment(specs, [0, 1], jobs=1)
    two = run_experiment(specs, [0, 1], jobs=2)
    assert all(x.same_results(y) for x, y in zip(one, two, strict=True))
    assert specs[0].key() != RunSpec("reinforce", budget=30_000.0, n_ticks=5).key()
    assert one[0].summary["clock"] < one[0].summary["worker_seconds"]


def test_the_table_cache_serves_a_rewritten_file_afresh(tmp_path: Path) -> None:
    from nasfilter.runs.experiment import file_identity
    from nasfilter.runs.inputs import spec_table
    from tests.tables import random_table

    def cached_table(path: Path | str, dataset: str) -> object:
        return spec_table(RunSpec("random", dataset=dataset, table=str(path)))

    path = tmp_path / "t.npz"
    random_table(1).save(path)
    first = cached_table(path, "cifar10")
    assert cached_table(str(path), "cifar10") is first  # same file: served from the cache
    before = file_identity(path)
    path.unlink()
    random_table(2).save(path)  # rewritten in place, same path and maybe the same size
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert file_identity(path) != before
    second = cached_table(path, "cifar10")
    assert second is not first
    np.testing.assert_array_equal(second.valid_acc, random_table(2).valid_acc)
    assert not np.array_equal(second.valid_acc, first.valid_acc)


def test_run_grids_runs_each_grid_on_its_own_seeds_and_a_shared_pair_once() -> None:
    a = grid(["random", "evolution"], budget=20_000.0, n_ticks=5)
    b = grid(["random", "reinforce"], budget=20_000.0, n_ticks=5)
    runs = run_grids([(a, [0]), (b, [0, 1])])
    pairs = [(r.spec.searcher, r.seed) for r in runs]
    # grid after grid, each in grid order; (random, 0) is in both and runs once
    assert pairs == [("random", 0), ("evolution", 0), ("random", 1), ("reinforce", 0),
                     ("reinforce", 1)]
    alone = run_experiment(b, [1])
    assert runs[2].same_results(alone[0])
    with pytest.raises(ValueError, match="seed list is empty"):
        run_grids([(a, [0]), (b, [])])


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_started_pool_runs_the_grids_as_this_process_and_stays_usable() -> None:
    specs = grid(["random", "evolution"], budget=20_000.0, n_ticks=5)
    alone = run_experiment(specs, [0, 1], jobs=1)
    with start_pool(2, preload=specs[0]) as pool:
        first = run_grids([(specs, [0, 1])], jobs=2, pool=pool)
        again = run_grids([(specs[:1], [1])], jobs=2, pool=pool)  # the same pool, once more
    assert len(first) == len(alone) == 4
    assert all(x.same_results(y) for x, y in zip(first, alone, strict=True))
    assert again[0].same_results(alone[1])
