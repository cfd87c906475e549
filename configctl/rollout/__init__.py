"""Safe rollout (see docs/rollout.md): a canary on real brokers, waves, and an automatic promote or abort.

* :mod:`~configctl.rollout.parsing`: durations, broker ids, wave sizes and rollout ids as typed;
* :mod:`~configctl.rollout.record`: the rollout's record (plan, step reached, undo bytes);
* :mod:`~configctl.rollout.restore`: a rollout's writes and undo planned without I/O (costs, batches,
  restore groups and phases), for any store;
* the store keeps that record and moves it on (``store.rollouts``, :class:`configctl.store.Rollouts`;
  ZooKeeper's is :mod:`configctl.zk.rollouts`, every multi version-checked on the record);
* :mod:`~configctl.rollout.health`: the soak watch and the health check command;
* :mod:`~configctl.rollout.steps`: judging one step (wait, soak, check) and the report;
* :mod:`~configctl.rollout.canary` and :mod:`~configctl.rollout.waves`: the two runners;
* :mod:`~configctl.rollout.control`: ``rollout abort`` and ``resume`` for a rollout whose process died;
* :mod:`~configctl.rollout.outcome`: the exit status a rollout's report earns, for every front end.

The command line is :mod:`configctl.cli.rollout`; the operator's guide is docs/rollout.md.
"""
