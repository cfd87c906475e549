"""One format for benchmark figures, and the closing table of ``make bench``.

Every benchmark measures a figure beside its raw limit in the same run (raw kazoo writes, a
multiRead, a bare Spark query) and, when ``CONFIGCTL_BENCH_RESULTS`` names a file, appends one
JSON line per target figure::

    {"figure": str, "measured": number, "unit": str, "limit": number|null, "ratio": number|null,
     "target": "<= 3x", "met": bool}

``python benchmarks/results.py FILE`` prints them as one table (what ``make bench`` ends with);
``--markdown`` prints them for ``benchmarks/RESULTS.md``, the machine described.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ENV = "CONFIGCTL_BENCH_RESULTS"


def write_json(results: dict, where: Path | None) -> None:
    """A benchmark's whole result as JSON, to ``where`` (``-``: stdout; None: nowhere)."""
    if where is None:
        return
    text = json.dumps(results, indent=2) + "\n"
    if str(where) == "-":
        sys.stdout.write(text)
    else:
        Path(where).write_text(text, encoding="utf-8")


def stop_all(processes: list, timeout: float = 30.0) -> None:
    """Terminate child processes, then kill the ones that do not exit within ``timeout`` each."""
    import subprocess

    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()


def record(
    figure: str,
    measured: float,
    unit: str,
    *,
    target: str,
    met: bool,
    limit: float | None = None,
    ratio: float | None = None,
) -> None:
    """Append one figure to the results file, if ``make bench`` asked for one."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = {
        "figure": figure,
        "measured": round(measured, 4),
        "unit": unit,
        "limit": None if limit is None else round(limit, 4),
        "ratio": None if ratio is None else round(ratio, 3),
        "target": target,
        "met": bool(met),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def record_rows(rows: list[dict]) -> None:
    """:func:`record` each row of a benchmark that built its figures as dicts of the same fields."""
    for r in rows:
        record(
            r["figure"],
            r["measured"],
            r["unit"],
            target=r["target"],
            met=r["met"],
            limit=r["limit"],
            ratio=r["ratio"],
        )


def format_table(rows: list[dict]) -> str:
    """The figures as an aligned table, closing with how many targets were met."""
    header = ("figure", "measured", "raw limit", "ratio", "target", "met")
    cells = [
        (
            r["figure"],
            f"{r['measured']:g} {r['unit']}",
            "" if r["limit"] is None else f"{r['limit']:g} {r['unit']}",
            "" if r["ratio"] is None else f"{r['ratio']:.2f}",
            r["target"],
            "yes" if r["met"] else "NO",
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    lines = [" | ".join(str(v).ljust(w) for v, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(v).ljust(w) for v, w in zip(c, widths, strict=True)) for c in cells]
    met = sum(1 for r in rows if r["met"])
    lines.append(f"{met} of {len(rows)} targets met")
    return "\n".join(lines)


def read_rows(path: Path) -> list[dict]:
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]


def machine() -> str:
    """The machine a run was made on, in one line (figures mean nothing without it)."""
    import platform
    import shutil
    import subprocess

    cores = os.cpu_count() or 0
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        memory = 0.0
    java = "no java"
    if shutil.which("java"):
        shown = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
        java = shown.splitlines()[0] if shown else "java"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.machine()}, {cores} cores, {memory:.0f} GiB, Python {platform.python_version()}, "
        f"{java}; load average at the end {load}"
    )


def markdown(rows: list[dict]) -> str:
    """The figures as a Markdown table (for benchmarks/RESULTS.md), with the machine."""
    lines = [
        f"Machine: {machine()}",
        "",
        "| figure | measured | raw limit | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        limit = "" if r["limit"] is None else f"{r['limit']:g} {r['unit']}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        met = "yes" if r["met"] else "**no**"
        lines.append(
            f"| {r['figure']} | {r['measured']:g} {r['unit']} | {limit} | {ratio} | {r['target']} | {met} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    rows = read_rows(Path(sys.argv[1]))
    print(markdown(rows) if "--markdown" in sys.argv[2:] else format_table(rows))
