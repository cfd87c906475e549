"""One handler per entity family (Kafka's ``ConfigHandler`` per entity type): broker, topic, quota, ip,
Kafka 4's group and client-metrics (KRaft clusters only), and a broker's loggers (in its memory only).

:func:`handler_for` answers from the registry (:func:`register`). Adding an entity type means: its
row in :mod:`configctl.entities`, its schema in ``schemas/``, a handler module here, and one line below.
What differs between families is asked of the handler (:class:`FamilyHandler`), never branched on
elsewhere: the listener's manager, validation, the write path and ``describe --effective`` dispatch
on it.

``BROKER``, ``TOPIC``, ``QUOTA`` and ``IP`` are the registered handlers, for the few questions that
name a family by design: the broker's own layers, and the listener's query API for plugins
(``topic_config``, ``quota_config``, ``ip_config``).
"""

from __future__ import annotations

from configctl.handlers.base import BrokerView, FamilyHandler, handler_for, handlers, register, unregister
from configctl.handlers.broker import BrokerHandler
from configctl.handlers.brokerlogger import BrokerLoggerHandler
from configctl.handlers.clientmetrics import ClientMetricsHandler
from configctl.handlers.group import GroupHandler
from configctl.handlers.ip import IpHandler
from configctl.handlers.quota import QuotaHandler
from configctl.handlers.topic import TopicHandler

BROKER = BrokerHandler()
TOPIC = TopicHandler()
QUOTA = QuotaHandler()
IP = IpHandler()
GROUP = GroupHandler()
CLIENT_METRICS = ClientMetricsHandler()
BROKER_LOGGER = BrokerLoggerHandler()
for _handler in (BROKER, TOPIC, QUOTA, IP, GROUP, CLIENT_METRICS, BROKER_LOGGER):
    register(_handler)

__all__ = [
    "BROKER",
    "BROKER_LOGGER",
    "CLIENT_METRICS",
    "GROUP",
    "IP",
    "QUOTA",
    "TOPIC",
    "BrokerView",
    "FamilyHandler",
    "handler_for",
    "handlers",
    "register",
    "unregister",
]
