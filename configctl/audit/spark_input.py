"""What goes wrong with the audit's input in Spark, said in one line.

Reading snapshots (:mod:`configctl.audit.reading`), the audit run (:mod:`configctl.audit.run`)
and reading applied logs (:mod:`configctl.audit.timeline`) all go through Spark: a path is
checked on Hadoop's file system before any read, so a missing one fails early and plainly, and
Spark's own errors (py4j's carry a Java stack) are cut to the first line a person reads. One
home, so every input error of the audit reads alike wherever it comes from.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from configctl.audit.options import AuditInputError


def check_path(spark: SparkSession, path: str) -> bool:
    """Fail early, in one line, on a path that does not exist; True for a directory."""
    try:
        jvm = spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        if not fs.exists(hadoop_path):
            raise AuditInputError(f"snapshots path {path} does not exist")
        return bool(fs.getFileStatus(hadoop_path).isDirectory())
    except AuditInputError:
        raise
    except Exception as exc:  # py4j errors carry a Java stack; keep the first line
        raise AuditInputError(f"cannot open snapshots path {path}: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    """The first line of ``exc`` a person reads (no Java stack frame), at most 300 characters."""
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace")):
            return line[:300]
    return type(exc).__name__
