"""nats_bench's ``print_information``: the text of ``query_info_str_by_arch`` and ``show``."""

from __future__ import annotations

from typing import Any

from nasfilter.bench.nats_api.compact import HOW, NeedsFullBenchmarkError


def _metric2str(loss: Any, acc: Any) -> str:
    if loss is None or acc is None:  # a compact table keeps no losses
        raise NeedsFullBenchmarkError("the info text shows losses and training accuracies, "
                                      "which this table does not keep; " + HOW)
    return f"loss = {loss:.3f} & top1 = {acc:.2f}%"


def print_information(
    records: Any, index: int, hp: str, arch_str: str, extra_info: Any
) -> list[str]:
    """The lines nats_bench prints for architecture ``index`` at setting ``hp``."""
    names = records.dataset_names(hp)
    strings = [arch_str, f"datasets : {names}, extra-info : {extra_info}"]
    for dataset in names:
        metric = records.get_compute_costs(index, hp, dataset)
        flop, param, latency = metric["flops"], metric["params"], metric["latency"]
        shown = f"{latency * 1000:.2f}" if latency is not None and latency > 0 else None
        str1 = f"{dataset:14s} FLOP={flop:6.2f} M, Params={param:.3f} MB, latency={shown} ms."
        train = records.get_metrics(index, hp, dataset, "train")
        train_s = _metric2str(train["loss"], train["accuracy"])
        if dataset == "cifar10":
            test = records.get_metrics(index, hp, dataset, "ori-test")
            str2 = f"{dataset:14s} train : [{train_s}], test  : [{_metric2str(test['loss'], test['accuracy'])}]"  # noqa: E501
        else:
            test_set = "ori-test" if dataset == "cifar10-valid" else "x-test"
            valid = records.get_metrics(index, hp, dataset, "x-valid")
            test = records.get_metrics(index, hp, dataset, test_set)
            str2 = (
                f"{dataset:14s} train : [{train_s}], valid : "
                f"[{_metric2str(valid['loss'], valid['accuracy'])}], test : "
                f"[{_metric2str(test['loss'], test['accuracy'])}]"
            )
        strings += [str1, str2]
    return strings
