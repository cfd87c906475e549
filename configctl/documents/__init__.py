"""The documents the reading commands print with ``-o json``, apart from how people see them.

``status``, ``describe``, ``history`` and ``rollout list|show`` each have one document here: its
data and its ``to_json()``, the shapes docs/reference/json-output.md pins. Two front ends stand on
them: the command line (:mod:`configctl.cli`) adds only how each is printed for people, and the
console (:mod:`configctl.console.documents`) serves the same documents. So nothing here imports
click, rich or either front end: a document is said once, and the two can never disagree.
"""
