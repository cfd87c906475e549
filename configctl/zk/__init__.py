"""Everything that talks to ZooKeeper, one idea per module (in the spirit of kazoo's recipes).

* :mod:`.connection`: what to connect to and how (connect string, timeout, digest/SASL/TLS), checked
  before a socket is opened;
* :mod:`.session`: one kazoo session with its ACL policy and the generic reads every caller needs
  (pipelined, or ZooKeeper's multiRead through :mod:`.multiread`);
* :mod:`.multiread`: the multiRead wire operation, the only code touching kazoo's internals;
* :mod:`.configstore`: Kafka's ``/config`` tree and configctl's history (the atomic multi);
* :mod:`.ephemeral`: an ephemeral node owned by this session (a listener's state);
* :mod:`.acls`: which ACL a node gets (Kafka's ``zookeeper.set.acl`` layout);
* :mod:`.retry`: the retry policies (kazoo's ``KazooRetry``), in one place;
* :mod:`.errors`: kazoo's exceptions become :mod:`configctl.errors` here, at the I/O edge.
"""
