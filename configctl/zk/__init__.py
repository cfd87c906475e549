"""Everything that talks to ZooKeeper, one idea per module (in the spirit of kazoo's recipes).

The features (writes, describe, status and ``--wait``, history and rollback, desired state,
rollouts) talk to :class:`configctl.store.ConfigStore`, which :mod:`.configstore` implements;
kazoo is imported here and in :mod:`configctl.localzk` only.

* :mod:`.connection`: what to connect to and how (connect string, timeout, digest/SASL/TLS), checked
  before a socket is opened;
* :mod:`.session`: one kazoo session with its ACL policy and the generic reads every caller needs
  (pipelined, or ZooKeeper's multiRead through :mod:`.multiread`);
* :mod:`.multiread`: the multiRead wire operation, the only code touching kazoo's internals;
* :mod:`.configstore`: Kafka's ``/config`` tree and configctl's history (the atomic multi): the
  ZooKeeper :class:`~configctl.store.ConfigStore`;
* :mod:`.configtree`: ``/config`` as a broker reads it (directories listed, users nesting clients);
* :mod:`.fleetstate`: what each broker's listener published (``/configctl/brokers``, ``/configctl/fleet``);
* :mod:`.rollouts`: rollout records (``/configctl/rollouts``, claims), moved on in the store's multi;
* :mod:`.registrations`: what Kafka registered (``/brokers/ids``, ``/brokers/topics``);
* :mod:`.ephemeral`, :mod:`.persistent`: a node this process keeps (a listener's state, its record);
* :mod:`.watchers`, :mod:`.purge`: the listener's watches on ``/config/changes`` and its purge;
* :mod:`.acls`: which ACL a node gets (Kafka's ``zookeeper.set.acl`` layout);
* :mod:`.retry`: the retry policies (kazoo's ``KazooRetry``), in one place;
* :mod:`.errors`: kazoo's exceptions become :mod:`configctl.errors` here, at the I/O edge.
"""
