"""Every call the manager makes into plugin code, each guarded: a plugin's failure is the
plugin's, never the listener's.

What each failure means follows Kafka's ``Reconfigurable`` (:mod:`configctl.listener.plugins`):
one that fails to configure stops the start; the first rejection of a change keeps the old
config for everyone; one that fails to reconfigure is logged and counted, and the change stays
applied (the other plugins already run with it); one that fails to close is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from configctl.errors import InvalidInput, one_line
from configctl.handlers.base import Moved
from configctl.listener.plugins import ConfigUpdate, ConfigView, LoadedPlugin, PluginContext

log = logging.getLogger("configctl.listener")


class PluginCalls:
    """The calls into ``plugins``; a failed reconfiguration counts toward ``counters``'
    ``plugin_errors`` (the manager's published counters)."""

    def __init__(self, plugins: Sequence[LoadedPlugin], counters: dict[str, int]) -> None:
        self.plugins = plugins
        self.wanted: frozenset[str] = frozenset().union(*(p.configs for p in plugins))
        """Every config key some plugin handles: the only keys whose moves are worked out."""
        self._counters = counters

    def configure(self, broker_id: int, view: ConfigView) -> None:
        """Hand every plugin its context (before the initial load)."""
        for plugin in self.plugins:
            try:
                plugin.configure(PluginContext(broker_id, view))
            except Exception as exc:
                raise InvalidInput(f"plugin {plugin.name} failed to configure: {one_line(exc)}") from None

    def close(self) -> None:
        for plugin in self.plugins:
            try:
                plugin.close()
            except Exception:
                log.exception("plugin %s failed to close", plugin.name)

    def validate(self, moved: list[Moved], number: int | None) -> tuple[str, str] | None:
        """The first rejection of ``moved`` by an interested plugin, as ``(plugin, reason)``; None:
        every one accepts."""
        for item in moved:
            update = ConfigUpdate(item.entity, item.values, item.changed, number)
            for plugin in self.plugins:
                if plugin.configs.isdisjoint(item.changed):
                    continue
                try:
                    plugin.validate(update)
                except Exception as exc:
                    return plugin.name, f"{item.entity.path}: {one_line(exc)}"
        return None

    def reconfigure(self, item: Moved, number: int | None) -> None:
        """Tell every interested plugin ``item`` moved (the change is committed)."""
        update = ConfigUpdate(item.entity, item.values, item.changed, number)
        for plugin in self.plugins:
            if plugin.configs.isdisjoint(item.changed):
                continue
            try:
                plugin.reconfigure(update)
            except Exception as exc:
                self._counters["plugin_errors"] += 1
                log.error("plugin %s failed to apply %s: %s", plugin.name, item.entity.path, one_line(exc))
