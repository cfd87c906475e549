"""Policies used by the tests (loaded with CONFIGCTL_POLICIES=policy_examples:...)."""

from __future__ import annotations


def no_short_retention(request):
    """Refuse any topic whose *effective* retention ends below one hour, whoever sets it."""
    if request.entity.type.value == "topics":
        value = request.value("retention.ms")
        if value is not None and value.strip().lstrip("-").isdigit() and 0 <= int(value) < 3_600_000:
            return f"retention.ms {value} is under one hour"
    return None


class ReasonRequired:
    name = "reason-required"

    def check(self, request):
        if not request.reason:
            raise ValueError("every change needs --reason")
