"""The Spark config audit: which brokers run stale or wrong config, and where the fleet disagrees.

- :mod:`~configctl.audit.run`: the audit itself: the snapshots read, condensed, and the drift
  classes run over them (see docs/audit.md) into one JSON-ready document.
- :mod:`~configctl.audit.reading`: the snapshot lines read with Spark, a malformed one marked.
- :mod:`~configctl.audit.condense`: the one pass that groups the lines by what they say, and
  the condensed table every finding reads.
- :mod:`~configctl.audit.spark_input`: a Spark path checked first, Spark's errors in one line.
- :mod:`~configctl.audit.job`: the spark-submit entry point.
- :mod:`~configctl.audit.drift`: one module per drift class, their common shape, the registry.
- :mod:`~configctl.audit.heatmap`: the brokers × keys heatmap the drift classes mark.
- :mod:`~configctl.audit.expected`: what ZooKeeper says the brokers should run, as plain data.
- :mod:`~configctl.audit.schema`: the Spark read schema and key-name rules, derived from
  :mod:`configctl.snapshot` and :mod:`configctl.catalogue`.
- :mod:`~configctl.audit.report`: the terminal summary and the HTML report.
- :mod:`~configctl.audit.simulate`: fleets with drift at known places written as snapshots,
  beside their ground truth and desired state; the fleet's values
  (:mod:`~configctl.audit.simulation_values`), its model (:mod:`~configctl.audit.simulation_model`),
  how one is built with drift injected (:mod:`~configctl.audit.simulation_build`) and the oracle
  (:mod:`~configctl.audit.simulation_truth`) each have their module.
- :mod:`~configctl.audit.spark`: the Spark session (local and quiet by default).
- :mod:`~configctl.audit.package`: the zip a cluster gets with ``--py-files``.

Nothing here imports pyspark at package import time; the modules that run Spark (``run``,
``reading``, ``condense``, ``spark_input``, ``job``, ``timeline``, ``drift``, ``heatmap`` and
``spark``) do.
"""
