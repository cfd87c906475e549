"""Time travel (docs/investigating.md): the past rebuilt from configctl's history and the
listeners' applied logs, answered by the same precedence code as the present.

- :mod:`configctl.travel.past`: an entity's config at a moment, from its history records, and the
  horizon beyond which history cannot say (exit 13, :class:`configctl.errors.BeyondHorizon`);
- :mod:`configctl.travel.at`: ``describe --effective --at T``;
- :mod:`configctl.travel.blame`: the writes that produced a key's value;
- :mod:`configctl.travel.diff`: two brokers, or one broker at two moments;
- :mod:`configctl.travel.feed`: every change across the fleet in a window (``history --since``);
- :mod:`configctl.travel.outside`: the writes made outside configctl (Kafka's tools, another admin
  client), derived when read from the config nodes' versions, the change notifications and the
  applied logs, beside configctl's own records; :mod:`configctl.travel.writers` says who wrote
  each change number still notified;
- :mod:`configctl.travel.timeline`: every interval during which brokers disagreed, from their
  applied logs (the rule ``audit --timeline`` is to report).
"""
