"""How the peer benchmarks show configctl beside Kafka's own tool, for both Kafka lines.

``kafka_peer.py`` (Kafka 3.9, ZooKeeper mode) and ``kraft_peer.py`` (Kafka 4.4, KRaft) measure
configctl beside kafka-configs.sh in one run each; this is the one home of how they say it: a
target row whose bar is the peer measured in the same run (never a figure from another run or
machine), and the side-by-side text table with its cells.
"""

from __future__ import annotations

from collections.abc import Sequence


def beside_peer(figure: str, measured: float, unit: str, limit: float, target: str, peer: float) -> dict:
    """One target row (benchmarks/results.py's fields): configctl's figure, the raw limit of the same
    run and their ratio, met when configctl is no slower than ``peer``, the peer's bar from this run."""
    return {
        "figure": figure,
        "measured": measured,
        "unit": unit,
        "limit": limit,
        "ratio": round(measured / limit, 2) if limit else None,
        "target": target,
        "met": measured <= peer,
    }


def beside_kafka_configs(figure: str, measured: float, limit: float, peer_s: float, changes: int = 1) -> dict:
    """A row in seconds whose bar is kafka-configs.sh in the same run: one run's median, or for
    ``changes`` changes the median multiplied out (the tool alters one entity per run)."""
    if changes == 1:
        target = f"<= kafka-configs.sh ({peer_s:g} s)"
    else:
        target = f"<= kafka-configs.sh x{changes:,}, extrapolated ({peer_s:g} s)"
    return beside_peer(figure, measured, "s", limit, target, peer_s)


def min_median_max(spread: dict) -> str:
    """A cell of wall times (``kafka_peer.spread``): ``min / median / max s``."""
    return f"{spread['min_s']:.3f} / {spread['median_s']:.3f} / {spread['max_s']:.3f} s"


def p50_p99(latency: dict) -> str:
    """A cell of latencies (``kafka_peer.latency``): ``p50 X / p99 Y ms``."""
    return f"p50 {latency['p50_ms']:.1f} / p99 {latency['p99_ms']:.1f} ms"


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as an aligned text table, the first row its header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


__all__ = ["beside_kafka_configs", "beside_peer", "min_median_max", "p50_p99", "text_table"]
