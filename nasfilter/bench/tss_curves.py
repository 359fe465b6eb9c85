"""The two real fidelities of the tss tables as learning curves, and each table's full one.

tss has no per-epoch curve: hp 12 (12 epochs, seed mean) and hp 200 (200 epochs, per seed) are
the only real rungs. :class:`TssCurves` serves them to multi-fidelity searchers through the
problem's :class:`~nasfilter.bench.fidelity.LearningCurves` door; :func:`full_fidelity` says which
of them is the table's full evaluation (what a run's front is made of).
"""

from __future__ import annotations

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.fidelity import FULL_FIDELITY, Fidelity
from nasfilter.bench.spaces import TSS
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.tss_data import SEEDS
from nasfilter.bench.tss_real import HP12_SEED, tss_table


def full_fidelity(table: BenchmarkTable) -> Fidelity:
    """The fidelity of ``table``'s full evaluation: hp 12, 12 epochs on sss and on
    ``tss-real``; hp 200, 200 epochs on ``tss-real-hp200``."""
    if table.space is not TSS:
        return FULL_FIDELITY
    epochs = int((table.provenance.extra or {}).get("eval_epochs", 12))
    return Fidelity(epochs, str(epochs))


class TssCurves:
    """The two real rungs of a tss dataset as learning curves: hp ``"12"`` (12 epochs, the
    seed mean, one pseudo-seed 0) and hp ``"200"`` (200 epochs, one of the seeds that exist,
    flagged seed records excluded). Only the last epoch of each exists (no per-epoch curve):
    another epoch is refused by name. Charged: the epochs' measured training time plus the
    modelled validation pass, as the tables charge a full evaluation."""

    synthetic = False

    def __init__(self, dataset: str) -> None:
        self.dataset = get_dataset(dataset).name
        self._hp12 = tss_table(self.dataset, "tss-real")
        self._hp200 = tss_table(self.dataset, "tss-real-hp200")

    def hps(self) -> list[str]:
        return ["12", "200"]

    def epochs(self, hp: str) -> int:
        return {"12": 12, "200": 200}[hp]

    def seeds(self, index: int, hp: str) -> list[int]:
        if hp == "12":
            return [HP12_SEED]
        row = self._hp200.valid_acc[index]
        return [seed for seed, acc in zip(SEEDS, row.tolist(), strict=True) if acc == acc]

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        epochs = self.epochs(hp)
        if iepoch != epochs - 1:
            raise ValueError(
                f"tss hp {hp} has no per-epoch curve: only its last epoch (iepoch {epochs - 1}, "
                f"Fidelity({epochs}, {hp!r})) is real; got iepoch {iepoch}"
            )
        table = self._hp12 if hp == "12" else self._hp200
        acc = float(table.valid_acc[index, table.seeds.index(seed)])
        cost = epochs * float(table.train_time[index]) + float(table.valid_time[index])
        return acc, cost
