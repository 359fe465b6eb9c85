"""The catalogue of compared methods: each a label (for figures and tables) and a searcher
and filter spec, with the study's methods, the peers and the one rule for a label.

``reproduce`` compares :data:`METHODS` and, on a table with learning curves,
:data:`MULTI_FIDELITY_METHODS` and :data:`CHEAP_SIGNAL_METHODS` (:func:`study_methods`);
``nasfilter demo`` runs :data:`DEMO_SEARCHERS`; a results table names a method by
:func:`method_label` when it has no catalogue label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nasfilter.searchers.optuna_adapter import optuna_available


@dataclass(frozen=True)
class Method:
    """One compared method: a label for figures and a searcher and filter spec."""

    label: str
    searcher: str
    filter: str = "none"
    # Run at every K of the workers comparison (False: only at the first K, to keep the
    # default reproduction fast; the method still appears in every other output).
    every_k: bool = True


def method_label(searcher: str, filter: str, workers: int = 1) -> str:
    """A method's label from its specs: ``searcher``, ``searcher | filter``, and `` (K=k)``
    for more than one simulated worker."""
    label = searcher if filter == "none" else f"{searcher} | {filter}"
    return label if workers == 1 else f"{label} (K={workers})"


# The study's setting: the full proxy scan whatever it costs (below 65536 s it evaluates
# nothing, and the report says so; see docs/searchers.md, small budgets).
FILTERING = Method("approximate filtering", "utilization-pareto[scan_share=None]")
REINFORCE_MNAS = Method("REINFORCE (MnasNet reward)", "reinforce-mnas")
# The model-based searcher, with and without the hardware signal as features, and
# established multi-objective optimizers as peers (these only when Optuna is installed).
OPTUNA_PEERS: tuple[Method, ...] = (
    Method("Optuna NSGA-II", "optuna-nsga2", every_k=False),
    Method("Optuna random", "optuna-random", every_k=False),
)
PEER_METHODS: tuple[Method, ...] = (
    Method("model-based search", "model-based", every_k=False),
    Method("model-based + utilization features", "model-based-hw", every_k=False),
    *(OPTUNA_PEERS if optuna_available() else ()),
)
# The peers left out of PEER_METHODS here, each with the extra that would bring it in.
LEFT_OUT_PEERS: tuple[tuple[Method, str], ...] = (
    () if optuna_available() else tuple((m, "optuna") for m in OPTUNA_PEERS)
)
# Every built-in searcher, and every built-in filter wrapping a searcher, and the peers.
METHODS: tuple[Method, ...] = (
    FILTERING,
    REINFORCE_MNAS,
    Method("REINFORCE (accuracy reward)", "reinforce"),
    Method("random search", "random"),
    Method("regularized evolution", "evolution"),
    Method("successive frontiers", "utilization-layers"),
    Method("random + successive-frontiers filter", "random", "successive-frontiers"),
    Method("REINFORCE (MnasNet) + proxy-threshold filter", "reinforce-mnas", "proxy-threshold"),
    *PEER_METHODS,
)

# The multi-fidelity searchers (they train at fewer epochs, so the table needs learning
# curves): the asynchronous ones at every K, the synchronous Hyperband and BOHB (a worker
# waits for its rung) at the first K.
MULTI_FIDELITY_METHODS: tuple[Method, ...] = (
    Method("ASHA (asynchronous successive halving)", "asha"),
    Method("MO-ASHA (accuracy and throughput)", "mo-asha"),
    Method("Hyperband", "hyperband", every_k=False),
    Method("BOHB", "bohb", every_k=False),
)


# The methods of "which cheap signal pays" (nasfilter.study.cheap_signals) not above: model-based
# search that screens at low fidelity, with and without the hardware signal as features, and
# MO-ASHA behind the online utilization filter (both signals), at the first K.
CHEAP_SIGNAL_METHODS: tuple[Method, ...] = (
    Method("model-based + low-fidelity screens", "model-based-mf", every_k=False),
    Method(
        "model-based + screens + utilization features",
        "model-based-mf[hardware=True]",
        every_k=False,
    ),
    Method(
        "MO-ASHA + online proxy-threshold filter",
        "mo-asha",
        "proxy-threshold[scan=False]",
        every_k=False,
    ),
)


def study_methods(with_curves: bool) -> tuple[Method, ...]:
    """What ``reproduce`` compares by default: :data:`METHODS`, then the
    :data:`MULTI_FIDELITY_METHODS` and :data:`CHEAP_SIGNAL_METHODS` when the table has
    learning curves (``with_curves``)."""
    return (*METHODS, *((*MULTI_FIDELITY_METHODS, *CHEAP_SIGNAL_METHODS) if with_curves else ()))


def peers_at_every_k(methods: tuple[Method, ...]) -> tuple[Method, ...]:
    """``methods`` with the :data:`PEER_METHODS` among them run at every K (each such run
    fits a model or runs an Optuna trial per proposal: minutes more at K = 4 and 16)."""
    return tuple(replace(m, every_k=True) if m in PEER_METHODS else m for m in methods)


# The study's four searchers as `nasfilter demo` runs them (approximate filtering with its
# default scan share), then the peers.
STUDY_SEARCHERS = ("utilization-pareto", "reinforce-mnas", "random", "evolution")
DEMO_SEARCHERS = (*STUDY_SEARCHERS, *(m.searcher for m in PEER_METHODS))
