"""Spark session for the audit: local and quiet by default, the cluster's own under spark-submit.

Local mode is what an operator with three brokers runs on a laptop, so the defaults favour a
fast, silent start: no UI, few shuffle partitions, a log4j2 configuration that keeps the JVM
at WARN, and the JVM's own stderr (start-up banners, warnings) sent to a log file instead of
the terminal. Under spark-submit (or when a session already exists, as in tests) the existing
session and its configuration are used as they are.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
# Enough for the 10M-row benchmark (cached parsed rows spill to disk beyond this); override
# with CONFIGCTL_SPARK_DRIVER_MEMORY on a smaller or bigger machine.
DEFAULT_DRIVER_MEMORY = "4g"
OBJECT_AGG_FALLBACK = 1_000_000

_LOG4J2 = """\
# configctl audit: keep Spark quiet; everything at WARN and above goes to stderr,
# which configctl sends to the audit log file in local mode.
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


class SparkStartError(Exception):
    """The Spark driver could not start; the message is one line and names the log file."""


def log_dir() -> Path:
    """Where the local session's log4j2 file and JVM log live (one per user)."""
    path = Path(tempfile.gettempdir()) / f"configctl-audit-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_file() -> Path:
    return log_dir() / "spark.log"


def local_cores(master: str) -> int:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master."""
    inside = master[len("local[") : -1] if master.startswith("local[") else ""
    if inside.isdigit():
        return max(1, int(inside))
    if master == "local":
        return 1
    return max(1, os.cpu_count() or 1)


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands the Python driver its gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    master: str | None = None,
    *,
    app_name: str = "configctl-audit",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
    quiet: bool = True,
) -> SparkSession:
    """The active session if there is one, else a new one (``master`` defaults to local[*])."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if under_spark_submit() and master is None:
        spark = builder.getOrCreate()  # the cluster's configuration, plus one runtime setting
        spark.conf.set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(OBJECT_AGG_FALLBACK))
        return spark
    master = master or DEFAULT_MASTER
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    config_file = log_dir() / "log4j2.properties"
    config_file.write_text(_LOG4J2, encoding="utf-8")
    memory = driver_memory or os.environ.get("CONFIGCTL_SPARK_DRIVER_MEMORY", DEFAULT_DRIVER_MEMORY)
    builder = (
        builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", memory)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{config_file}")
        .config("spark.sql.session.timeZone", "UTC")
        # The condensing aggregation (collect_set per distinct line) runs in the object hash
        # aggregate; its default fallback to sort-based aggregation after 128 keys per task
        # triples the time on large fleets. A task holds one small set per distinct line it
        # saw, so the hash map stays far below the driver memory even at a million keys.
        .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(OBJECT_AGG_FALLBACK))
    )
    if local:
        # Measured on 2 cores: one shuffle partition per core and no adaptive execution halve
        # the time of a small audit (fewer tasks and jobs per stage) and cost nothing at 10M
        # rows, where the condensed data the shuffles carry is small anyway.
        partitions = shuffle_partitions or local_cores(master)
        builder = (
            builder.config("spark.sql.shuffle.partitions", str(partitions))
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    elif shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    with _stderr_to(log_file() if quiet else None):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextlib.contextmanager
def audit_session(master: str | None = None, **kwargs: object) -> Iterator[SparkSession]:
    """A session for one audit: stopped afterwards only if this call started it.

    Under spark-submit, in tests, or in a notebook the session belongs to someone else and
    must outlive the audit.
    """
    existing = SparkSession.getActiveSession()
    if existing is not None:
        spark = existing
    else:
        try:
            spark = build_session(master, **kwargs)  # type: ignore[arg-type]
        except Exception as exc:  # no Java, a bad master URL, not enough memory for the JVM
            text = str(exc).strip()
            first = text.splitlines()[0][:200] if text else type(exc).__name__
            raise SparkStartError(f"cannot start Spark: {first} (details in {log_file()})") from None
    try:
        yield spark
    finally:
        if existing is None:
            spark.stop()


@contextlib.contextmanager
def _stderr_to(path: Path | None) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM starts, so the JVM inherits it.

    The JVM prints banners and warnings straight to its stderr before log4j is even
    configured; this is the only way to keep them off an operator's terminal. Python's own
    stderr is restored as soon as the JVM is up.
    """
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
