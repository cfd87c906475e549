"""Spark session for the audit: local and quiet by default, sized to the cluster on a cluster.

Local mode is what an operator with three brokers runs on a laptop, so the defaults favour a
fast, silent start: no UI, few shuffle partitions, a log4j2 configuration that keeps the JVM
at WARN, and the JVM's own stderr (start-up banners, warnings) sent to a log file instead of
the terminal. On a cluster master (``--master spark://…``, ``yarn``, ``k8s://…``) the session
waits briefly for its first executors and sizes shuffles to the cores they bring: Spark's
default of 200 shuffle partitions made every small stage of the audit 200 tasks (a 1-worker
cluster ran the audit 4.6× slower than local mode). Adaptive execution is off, as in local
mode: the audit's shuffles carry the condensed table, small by construction, and adaptive
execution turned each of its ~6 queries into several jobs. Every setting yields to the
operator's own (``--conf``, spark-defaults.conf). Under spark-submit (or when a session
already exists, as in tests) the existing session is used; the job sizes shuffle partitions
to the cluster only when nobody set them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from configctl.settings import DEFAULT_SPARK_DRIVER_MEMORY, environment_value

DEFAULT_MASTER = "local[*]"
# Enough for the 10M-row benchmark (cached parsed rows spill to disk beyond this); override
# with CONFIGCTL_SPARK_DRIVER_MEMORY (configctl.settings' spark-driver-memory) on a smaller or
# bigger machine.
DEFAULT_DRIVER_MEMORY = DEFAULT_SPARK_DRIVER_MEMORY
OBJECT_AGG_FALLBACK = 1_000_000
# How long a cluster session waits for its first executor before sizing shuffles to what it has.
EXECUTOR_WAIT_SECONDS = 60.0
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

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
    conf: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SparkSession:
    """The active session if there is one, else a new one (``master`` defaults to local[*]).

    ``conf`` (the operator's ``--conf KEY=VALUE``) is applied last and wins over every default
    here; ``progress`` is told what the session is waiting for (starting, executors).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    conf = dict(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if under_spark_submit() and master is None:
        spark = builder.getOrCreate()  # the cluster's configuration, plus runtime settings
        spark.conf.set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(OBJECT_AGG_FALLBACK))
        if not spark.sparkContext.master.startswith("local"):
            wait_for_executors(spark, EXECUTOR_WAIT_SECONDS, progress)
        size_shuffles(spark)
        return spark
    master = master or DEFAULT_MASTER
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    config_file = log_dir() / "log4j2.properties"
    config_file.write_text(_LOG4J2, encoding="utf-8")
    memory = driver_memory or environment_value("spark-driver-memory")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": memory,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{config_file}",
        "spark.sql.session.timeZone": "UTC",
        # The condensing aggregation (collect_set per distinct line) runs in the object hash
        # aggregate; its default fallback to sort-based aggregation after 128 keys per task
        # triples the time on large fleets. A task holds one small set per distinct line it
        # saw, so the hash map stays far below the driver memory even at a million keys.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": str(OBJECT_AGG_FALLBACK),
        # Measured on 2 cores: no adaptive execution halves the time of a small audit (fewer
        # jobs per query) and costs nothing at 10M rows, where the condensed data the shuffles
        # carry is small anyway. On a cluster each extra job costs more, not less.
        "spark.sql.adaptive.enabled": "false",
    }
    if local:
        # One shuffle partition per core.
        settings[SHUFFLE_PARTITIONS] = str(shuffle_partitions or local_cores(master))
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    elif shuffle_partitions:
        settings[SHUFFLE_PARTITIONS] = str(shuffle_partitions)
    settings.update(conf)
    builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if progress:
        progress(f"starting Spark ({master})")
    with _stderr_to(log_file() if quiet else None):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not local:
        wait_for_executors(spark, EXECUTOR_WAIT_SECONDS, progress)
        if SHUFFLE_PARTITIONS not in settings:
            size_shuffles(spark)
    return spark


def executor_count(spark: SparkSession) -> int:
    """Executors registered with the driver (the driver itself not counted)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def wait_for_executors(
    spark: SparkSession, timeout: float, progress: Callable[[str], None] | None = None
) -> int:
    """Wait (at most ``timeout`` seconds) until the cluster has given the session an executor.

    Shuffle partitions and input splits are sized from the cores that have registered, so
    sizing before any executor is up would size for none. Returns how many there are.
    """
    deadline = time.monotonic() + timeout
    count = executor_count(spark)
    while count == 0 and time.monotonic() < deadline:
        if progress:
            progress("waiting for the cluster's executors")
        time.sleep(0.2)
        count = executor_count(spark)
    return count


def size_shuffles(spark: SparkSession) -> int:
    """Shuffle partitions = the cores the session has or was promised, unless set.

    The cores registered so far (Spark's defaultParallelism), or what the configuration asks
    for when more executors are still coming (``spark.executor.instances`` ×
    ``spark.executor.cores``). An operator's own value
    (``--conf`` or spark-defaults.conf) is kept.
    """
    conf = spark.sparkContext.getConf()
    if conf.contains(SHUFFLE_PARTITIONS):
        return int(spark.conf.get(SHUFFLE_PARTITIONS))
    promised = 0
    instances, cores = conf.get("spark.executor.instances"), conf.get("spark.executor.cores")
    if instances and cores and instances.isdigit() and cores.isdigit():
        promised = int(instances) * int(cores)
    partitions = max(1, spark.sparkContext.defaultParallelism, promised)
    spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    return partitions


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
