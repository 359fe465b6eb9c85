"""Full-fidelity NATS-Bench sss and tss benchmarks: every record, setting, seed and epoch of an
archive, converted once into memory-mapped arrays (:mod:`.layout`), read by
:class:`FullBenchmark` and written by :func:`convert_full`."""

from nasfilter.bench.fullbench.bench import FullBenchmark, NotFullBenchmarkError, open_benchmark
from nasfilter.bench.fullbench.writer import convert_full

__all__ = ["FullBenchmark", "NotFullBenchmarkError", "convert_full", "open_benchmark"]
