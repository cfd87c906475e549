"""Reading snapshot lines with Spark: every line kept, a malformed one marked with its problem.

The audit's one read of its input (docs/reference/snapshots.md): the explicit schema of
:func:`configctl.audit.schema.snapshot_schema`, so a bad line is counted and shown, never fatal;
what only a bad line needs (its problem, its file) is computed in branches good lines never
take, so the read costs what a bare read does. :mod:`configctl.audit.condense` takes it from here.
"""

from __future__ import annotations

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from configctl import snapshot
from configctl.audit.options import AuditInputError
from configctl.audit.schema import CORRUPT_COLUMN, snapshot_schema
from configctl.audit.spark_input import check_path, first_line


def read_snapshots(spark: SparkSession, path: str, pattern: str = snapshot.FILE_PATTERN) -> DataFrame:
    """The raw snapshot lines of a directory, a file or a URI; a malformed one with its problem and file.

    Uses the explicit schema with ``_corrupt_record`` (PERMISSIVE): a bad line is kept and
    counted, never fatal. In a directory only files matching ``pattern`` are read, so the
    simulator's ``ground_truth.json`` and a listener's half-written temporary file are skipped.
    ``_bad`` names a line's problem (null for a good line) and ``_file`` the file of a bad
    line: asked of Spark only for bad lines (``input_file_name`` in a branch good lines never
    take), where attaching ``_metadata`` to every line cost about a fifth of the read.
    """
    is_dir = check_path(spark, path)
    reader = (
        spark.read.schema(snapshot_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .option("ignoreMissingFiles", "true")  # the listener replaces files while we read
    )
    if is_dir:
        reader = reader.option("pathGlobFilter", pattern)
    try:
        raw = reader.json(path).selectExpr("*", f"{_problem()} AS _bad")
        return raw.selectExpr(
            "*", "CASE WHEN _bad IS NOT NULL THEN regexp_extract(input_file_name(), '[^/]*$', 0) END AS _file"
        )
    except PySparkException as exc:
        raise AuditInputError(f"cannot read snapshots at {path}: {first_line(exc)}") from None


def _problem() -> str:
    """What is wrong with a raw line: ``unparseable``, ``missing_fields``, or null for a good line."""
    missing = " OR ".join(
        f"{name} IS NULL OR {name} = ''" if name in ("entity_path", "name", "source") else f"{name} IS NULL"
        for name in snapshot.REQUIRED_FIELDS
    )
    return (
        f"CASE WHEN {CORRUPT_COLUMN} IS NOT NULL THEN 'unparseable' WHEN {missing} THEN 'missing_fields' END"
    )
