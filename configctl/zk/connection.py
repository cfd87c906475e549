"""Moved to :mod:`configctl.zkconnection` (pure: the settings floor reads it); kept while the move lands."""

from configctl.zkconnection import *  # noqa: F403
from configctl.zkconnection import ConnectionSettings, ConnectString, Digest, Sasl, Tls  # noqa: F401
