"""Who is writing, as history records name them when the operator gives no ``--identity``.

Every store records who made each write; the default is the same on every store (ZooKeeper's
history nodes, a KRaft cluster's history topic) so one operator reads as one person across both.
"""

from __future__ import annotations

import getpass
import socket


def default_identity() -> str:
    """``user@host`` of this process (``unknown@host`` when no user name can be found)."""
    try:
        user = getpass.getuser()
    except Exception:  # getuser raises various errors when no user name can be found
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
