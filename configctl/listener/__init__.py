"""The broker-side listener: Kafka's DynamicConfigManager as a library a broker process embeds.

``ConfigListener`` connects to ZooKeeper, loads every entity config, follows the change
notifications (in order, coalesced, with expiry and session recovery), resolves each value's
effective setting with :mod:`configctl.precedence`, drives :class:`Reconfigurable` plugins, and
publishes its state (``/configctl/brokers/<id>``, ``<state-dir>/broker-<id>.jsonl``).
See docs/listener.md.
"""

from configctl.handlers.base import Problem
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.notification_listener import (
    DEFAULT_CHANGE_EXPIRATION_MS,
    SequentialNotificationListener,
)
from configctl.listener.plugins import (
    ENTRY_POINT_GROUP,
    ConfigUpdate,
    ConfigView,
    PluginContext,
    Reconfigurable,
    load_plugin,
    load_plugins,
)
from configctl.listener.records import AppliedChange
from configctl.listener.runtime import ConfigListener, load_static_config
from configctl.zk.purge import expired_prefix

__all__ = [
    "DEFAULT_CHANGE_EXPIRATION_MS",
    "ENTRY_POINT_GROUP",
    "AppliedChange",
    "ConfigListener",
    "ConfigUpdate",
    "ConfigView",
    "DynamicConfigManager",
    "PluginContext",
    "Problem",
    "Reconfigurable",
    "SequentialNotificationListener",
    "expired_prefix",
    "load_plugin",
    "load_plugins",
    "load_static_config",
]
