"""One local Spark session for every Spark test, and simulated fleets written once per size.

Starting the JVM costs seconds, so the session is session-scoped; the job never stops a
session it did not start (``configctl.audit.spark.audit_session``), so the CLI and
``job.main`` run in-process on this same session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from configctl.audit.simulate import simulate
from configctl.audit.simulation_model import SimulationSpec


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from configctl.audit.spark import build_session

    session = build_session("local[2]", driver_memory="2g")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``fleet(brokers=.., topics=.., ...)``: a simulated fleet's directory (written once per spec)."""
    made: dict[SimulationSpec, Path] = {}

    def make(**kwargs: Any) -> Path:
        spec = SimulationSpec(**kwargs)
        if spec not in made:
            out = tmp_path_factory.mktemp(f"fleet-b{spec.brokers}-s{spec.seed}")
            simulate(spec, out)
            made[spec] = out
        return made[spec]

    return make


@pytest.fixture(scope="session")
def audited(spark: Any) -> Callable[..., dict[str, Any]]:
    """``audited(directory, desired=False)``: the audit document, computed once per input."""
    from configctl.audit.expected import read_expected_state
    from configctl.audit.run import audit
    from configctl.audit.simulate import DESIRED_STATE_FILE

    docs: dict[tuple[Path, bool], dict[str, Any]] = {}

    def run(directory: Path, desired: bool = False) -> dict[str, Any]:
        if (directory, desired) not in docs:
            state = read_expected_state(directory / DESIRED_STATE_FILE) if desired else None
            docs[(directory, desired)] = audit(spark, str(directory), state)
        return docs[(directory, desired)]

    return run
