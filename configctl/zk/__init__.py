"""Everything that talks to ZooKeeper, one idea per module (in the spirit of kazoo's recipes).

The features (writes, describe, status and ``--wait``, history and rollback, desired state,
rollouts) talk to the store's roles (:mod:`configctl.store`), which :mod:`.configstore` implements
for ZooKeeper; only the composition roots (:mod:`configctl.cli.context`, the listener) import this
package. kazoo is imported here and in :mod:`configctl.localzk` only; what to connect to and how is
the pure :mod:`configctl.zkconnection`.

* :mod:`.session`: one kazoo session with its ACL policy and the generic reads every caller needs
  (pipelined, or ZooKeeper's multiRead through :mod:`.multiread`);
* :mod:`.multiread`: the multiRead wire operation, the only code touching kazoo's internals;
* :mod:`.configstore`: :class:`~.configstore.ZooKeeperStore`, every store role over Kafka's
  ``/config`` tree and configctl's history, a front over :mod:`.multi` (the one atomic write),
  :mod:`.multisize` (what fits in one), :mod:`.pipeline` (transactions in flight, and what was in
  flight when cut off), :mod:`.history`, :mod:`.notifications`, :mod:`.quotacleanup` and
  :mod:`.ownership` (who owns the metadata);
* :mod:`.configtree`: ``/config`` as a broker reads it (directories listed, users nesting clients);
* :mod:`.fleetstate`: what each broker's listener published (``/configctl/brokers``, ``/configctl/fleet``);
* :mod:`.rollouts`: rollout records (``/configctl/rollouts``, claims), moved on in the store's multi,
  a front over :mod:`.rolloutrecords`, :mod:`.rolloutclaims`, :mod:`.rolloutcreate`,
  :mod:`.rolloutsalvage` and :mod:`.activerollout`;
* :mod:`.fleetwatch`: the console's one set of watches on the fleet;
* :mod:`.registrations`: what Kafka registered (``/brokers/ids``, ``/brokers/topics``);
* :mod:`.ephemeral`, :mod:`.persistent`: a node this process keeps (a listener's state, its record);
* :mod:`.watchers`, :mod:`.purge`: the listener's watches on ``/config/changes`` and its purge;
* :mod:`.acls`: which ACL a node gets (Kafka's ``zookeeper.set.acl`` layout);
* :mod:`.retry`: the retry policies on kazoo's ``KazooRetry`` (:mod:`configctl.retrying`'s waits);
* :mod:`.errors`: kazoo's exceptions become :mod:`configctl.errors` here, at the I/O edge.
"""
