"""The Spark config audit: which brokers run stale or wrong config, and where the fleet disagrees.

- :mod:`~configctl.audit.job`: reading and condensing snapshots, running the drift classes
  (see docs/audit.md), and the spark-submit entry point.
- :mod:`~configctl.audit.drift`: one module per drift class, their common shape, the registry.
- :mod:`~configctl.audit.heatmap`: the brokers × keys heatmap the drift classes mark.
- :mod:`~configctl.audit.expected`: what ZooKeeper says the brokers should run, as plain data.
- :mod:`~configctl.audit.schema`: the Spark read schema and key-name rules, derived from
  :mod:`configctl.snapshot` and :mod:`configctl.catalogue`.
- :mod:`~configctl.audit.report`: the terminal summary and the HTML report.
- :mod:`~configctl.audit.simulate`: fleets with drift at known places, and their ground truth.
- :mod:`~configctl.audit.spark`: the Spark session (local and quiet by default).
- :mod:`~configctl.audit.package`: the zip a cluster gets with ``--py-files``.

Nothing here imports pyspark at package import time; ``job``, ``drift``, ``heatmap`` and
``spark`` do.
"""
