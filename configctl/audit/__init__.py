"""The Spark config audit: which brokers run stale or wrong config, and where the fleet disagrees.

- :mod:`~configctl.audit.job`: the Spark job (findings, Contract 5) and its spark-submit entry point.
- :mod:`~configctl.audit.schema`: the snapshot format (Contract 4) and the key lists findings use.
- :mod:`~configctl.audit.desired`: the desired state (what ZooKeeper says) as plain data.
- :mod:`~configctl.audit.report`: the terminal summary and the HTML report.
- :mod:`~configctl.audit.simulate`: fleets with drift at known places, and their ground truth.
- :mod:`~configctl.audit.spark`: the Spark session (local and quiet by default).

Nothing here imports pyspark at package import time; ``job`` and ``spark`` do.
"""
