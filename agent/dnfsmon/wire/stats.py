"""Service-time distributions in constant memory.

Count, sum, minimum and maximum are exact. Percentiles come from logarithmic
buckets 1 % wide (each value is counted in the bucket [1.01^k, 1.01^(k+1)) ns
and reported as the bucket's geometric middle), so a percentile is within
0.5 % of the exact order statistic, whatever the number of calls: a multi-GB
capture costs a few hundred buckets per operation, not one number per call.
A difference of two durations can be negative (capture timestamps jitter):
negative values have buckets of their own, mirrored, so a percentile is never
clamped to 0.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Optional

GROWTH = 1.01
_LOG_GROWTH = math.log(GROWTH)


class Distribution:
    """Durations in nanoseconds."""

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0
        self.minimum_ns: Optional[int] = None
        self.maximum_ns: Optional[int] = None
        # (sign, index) -> count: (-1, -k) for -[1.01^k, 1.01^(k+1)), (0, 0) for 0, (1, k) for positives,
        # so that the keys sort as the values do.
        self.buckets: Counter[tuple[int, int]] = Counter()

    def add(self, value_ns: int) -> None:
        self.count += 1
        self.total_ns += value_ns
        self.minimum_ns = value_ns if self.minimum_ns is None else min(self.minimum_ns, value_ns)
        self.maximum_ns = value_ns if self.maximum_ns is None else max(self.maximum_ns, value_ns)
        if value_ns > 0:
            self.buckets[(1, int(math.log(value_ns) / _LOG_GROWTH))] += 1
        elif value_ns < 0:
            self.buckets[(-1, -int(math.log(-value_ns) / _LOG_GROWTH))] += 1
        else:
            self.buckets[(0, 0)] += 1

    def mean_ms(self) -> Optional[float]:
        return self.total_ns / self.count / 1e6 if self.count else None

    def percentile_ms(self, fraction: float) -> Optional[float]:
        """The nearest-rank percentile (fraction 0.5 for p50), within 0.5 %."""
        if not self.count:
            return None
        rank = max(1, math.ceil(fraction * self.count))
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= rank:
                sign, index = key
                value = sign * GROWTH ** (abs(index) + 0.5) / 1e6
                # The exact extremes are known: never report beyond them.
                assert self.minimum_ns is not None and self.maximum_ns is not None
                return min(max(value, self.minimum_ns / 1e6), self.maximum_ns / 1e6)
        return None

    def summary(self) -> dict[str, Optional[float]]:
        """The figures every report shows, in milliseconds."""
        return {
            "count": self.count,
            "avg_ms": _round(self.mean_ms()),
            "p50_ms": _round(self.percentile_ms(0.50)),
            "p95_ms": _round(self.percentile_ms(0.95)),
            "p99_ms": _round(self.percentile_ms(0.99)),
            "max_ms": _round(self.maximum_ns / 1e6 if self.maximum_ns is not None else None),
        }


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)
