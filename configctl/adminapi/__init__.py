"""The second path to the brokers: Kafka's Admin API, the way :mod:`configctl.zk` is the first.

One edge package, shaped like ``zk/``: :mod:`~configctl.adminapi.connection` opens a client from
``--bootstrap-server`` and ``--command-config``, :mod:`~configctl.adminapi.errors` turns the Kafka
client's exceptions into configctl's own (each with its exit status) here and nowhere else, and
:mod:`~configctl.adminapi.client` asks the brokers what they run (DescribeConfigs with synonyms,
DescribeClientQuotas, DescribeUserScramCredentials) in configctl's own terms: entities and
:class:`~configctl.reported.ReportedConfig` values. Nothing above this package imports
the Kafka client.
"""
