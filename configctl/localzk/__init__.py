"""A real Apache ZooKeeper on this machine: one server or a small ensemble, for demos, tests and benchmarks.

configctl must be exercised against the real thing (its writes rely on ZooKeeper's multi, versions and
sequential nodes), yet asking users to install ZooKeeper is a hurdle. pyspark, a dependency anyway,
ships the ZooKeeper server jars, so we run ``java ... ZooKeeperServerMain`` (one node) or
``QuorumPeerMain`` (an ensemble) from them.

The data directory *is* the server's identity; everything lives under it::

    <data-dir>/configctl-zk.json      what is running: pids, ports, commands (exists only while started)
    <data-dir>/server-<id>/           each node's zoo.cfg, data and logs
    <data-dir>/client.env             how a client connects (CONFIGCTL_* variables, no secrets)
    <data-dir>/tls/, <data-dir>/sasl/ certificates and the SASL user, with ``--tls`` / ``--sasl``

One module per idea:

- :mod:`.runtime` finds Java and ZooKeeper's jars;
- :mod:`.ports` says whether a loopback port is free and picks free ones;
- :mod:`.nodeconfig` writes a node's ``zoo.cfg`` and logging config and builds its command;
- :mod:`.process` launches, recognises (safely, never a recycled pid), signals and reaps processes;
- :mod:`.state` is the data directory's record of what runs, and its lock;
- :mod:`.probe` asks a running server whether it serves, and in which role;
- :mod:`.tls` makes the secured server's CA and certificates, :mod:`.sasl` its SASL user;
- :mod:`.security` says what TLS and SASL mean in a node's configuration;
- :mod:`.client` is what a client needs to connect (options, ``client.env``, kazoo arguments);
- :mod:`.server` composes them into :class:`LocalZooKeeper`.
"""

from __future__ import annotations

from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST, port_is_free
from configctl.localzk.runtime import find_java, find_zookeeper_classpath
from configctl.localzk.server import LocalZooKeeper, NodeStatus, ServerStatus
from configctl.localzk.state import STATE_FILE, default_data_dir

__all__ = [
    "HOST",
    "STATE_FILE",
    "ClientSettings",
    "LocalZooKeeper",
    "NodeStatus",
    "ServerStatus",
    "default_data_dir",
    "find_java",
    "find_zookeeper_classpath",
    "port_is_free",
]
