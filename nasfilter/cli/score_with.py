"""``--score-with [DATASET=]FILE``, shared by ``compare``, ``report``, ``ceiling`` and
``reproduce --space tss``: runs scored on the user's own accuracies
(:mod:`nasfilter.runs.rescore`). Its own module, so that only the commands that take it
import the results layer."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from nasfilter.bench.datasets import get_dataset
from nasfilter.cli.args import check_input_file
from nasfilter.runs.rescore import Accuracies, Rescoring, read_accuracies


def add_score_with(
    p: argparse.ArgumentParser, kept: str = "Nothing is written to the database"
) -> None:
    """``--score-with [DATASET=]FILE`` (repeatable): score stored runs on the user's own
    accuracies (:mod:`nasfilter.runs.rescore`); read with :func:`score_with_files`.
    ``kept``: the help's last sentence, what the command leaves as it was."""
    p.add_argument(
        "--score-with",
        action="append",
        metavar="[DATASET=]FILE",
        help="score the runs on these accuracies instead of their table's: a .npy of one "
        "accuracy per architecture of the space, in percent, NaN where unknown (e.g. test "
        "accuracies from a full NATS-Bench archive); repeat as DATASET=FILE for runs on "
        "several datasets. The runs' evaluations are kept; their fronts, the true front and "
        f"every metric are recomputed. {kept}",
    )


def score_with_files(
    values: Sequence[str], datasets: set[str], trust_plugins: bool = False
) -> Rescoring:
    """``--score-with`` read into a :class:`~nasfilter.runs.rescore.Rescoring`. A bare FILE
    is for the one dataset of ``datasets`` (the runs'); ValueError naming the value when
    they are several, when a dataset is given twice or has no run, or when a file is unreadable
    (:func:`~nasfilter.runs.rescore.read_accuracies`); ``trust_plugins`` as the commands'
    ``--trust-plugins``."""
    if not datasets:
        raise ValueError("--score-with: the database holds no runs to score")
    return Rescoring(accuracy_files(values, datasets), trust_plugins)


def accuracy_files(values: Sequence[str], datasets: set[str]) -> dict[str, Accuracies]:
    """``--score-with`` read into {dataset: accuracies}, with :func:`score_with_files`'s
    rules and errors, for runs on ``datasets``."""
    out: dict[str, Accuracies] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            if len(datasets) != 1:
                raise ValueError(
                    f"--score-with {value!r}: the runs are on {', '.join(sorted(datasets))}; "
                    "give one file per dataset as DATASET=FILE"
                )
            name, path = next(iter(datasets)), value
        try:
            dataset = get_dataset(name).name
        except ValueError as exc:
            raise ValueError(f"--score-with {value!r}: {exc}") from None
        if dataset in out:
            raise ValueError(f"--score-with {value!r}: {dataset} is given twice")
        if dataset not in datasets:
            raise ValueError(f"--score-with {value!r}: no run is on {dataset} (the runs are on "
                             f"{', '.join(sorted(datasets))})")  # fmt: skip
        check_input_file(path, "--score-with", "accuracy")
        out[dataset] = read_accuracies(path, dataset)
    return out


__all__ = ["accuracy_files", "add_score_with", "score_with_files"]
