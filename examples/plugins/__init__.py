"""Example :class:`configctl.listener.Reconfigurable` plugins.

* :mod:`examples.plugins.quota_enforcer`: client quotas enforced with token buckets.
* :mod:`examples.plugins.log_retention`: topic retention applied to log segment files.

Load them with ``configctl listener run --plugin examples.plugins.quota_enforcer:ClientQuotaEnforcer``
(run from the repository root, or with it on ``PYTHONPATH``).
"""
