"""Desired state as code (docs/reference/desired-state-files.md): the files, the plan between them and ZooKeeper, applying it.

One module per idea, each usable alone:

* :mod:`~configctl.desired.syntax`: YAML/JSON text to plain values with lines, and back (pure);
* :mod:`~configctl.desired.document`: what a desired-state file means: entities, configs in
  stored form, every problem with its line; the document ``export`` writes (pure);
* :mod:`~configctl.desired.plan`: the per-key difference with ZooKeeper, secrets compared without
  spurious diffs, saved plans (pure, plus one pipelined read);
* :mod:`~configctl.desired.apply`: writing a plan in batched, version-checked multis and saying
  exactly what was and was not committed (:class:`~configctl.desired.apply.ApplyReport`);
* :mod:`~configctl.desired.export`: the store's configs as a desired-state document.

The command-line shells are in :mod:`configctl.cli.desired`.
"""
