"""A complete custom filter: evaluate only networks that are fast enough on the device.

From the command line (quote the brackets)::

    nasfilter run --searchers random --db r.db \
        --filters 'examples.custom_filter:FastEnough[min_throughput=4e5]'
"""

from nasfilter.bench.spaces.sss import Arch
from nasfilter.filters import Filter


class FastEnough(Filter):
    """Pass architectures whose proxy throughput (images/s) is at least ``min_throughput``;
    each proxy query is charged to the simulated clock."""

    name = "fast-enough"
    needs_proxy = True

    def __init__(self, min_throughput: float = 4e5) -> None:
        if not (isinstance(min_throughput, (int, float)) and min_throughput >= 0):  # NaN too
            raise ValueError(f"min_throughput must be images/s >= 0, got {min_throughput!r}")
        self.min_throughput = float(min_throughput)

    def keep(self, arch: Arch) -> bool:
        return self.proxy.query(arch).throughput >= self.min_throughput
