"""Kafka's bugs as the models declare them, a JIRA linked to Apache's tracker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kmc.checker import KnownBug

JIRA = "https://issues.apache.org/jira/browse/"


def kafka_bug(
    key: str,
    summary: str,
    *,
    component: str,
    since: str | None,
    fixed_in: str | None,
    preset: str,
    violates: str | tuple[str, ...],
    settings: Mapping[str, Any] | None = None,
    fixed_preset: str | None = None,
    fixed_settings: Mapping[str, Any] | None = None,
    also: tuple[str, ...] = (),
) -> KnownBug:
    """A bug of Kafka: ``key`` is its JIRA (KAFKA-NNNN), the KIP that fixed a design flaw (KIP-NNN),
    or "finding" for one the models found; the link goes to the JIRA named first (a KIP's page has
    no address made from its number alone, so a bug known by a KIP only has no link)."""
    jiras = [k for k in (key, *also) if k.startswith("KAFKA-")]
    url = JIRA + jiras[0] if jiras else None
    return KnownBug(
        key=key,
        summary=summary,
        component=component,
        since=since,
        fixed_in=fixed_in,
        preset=preset,
        violates=(violates,) if isinstance(violates, str) else tuple(violates),
        settings=dict(settings or {}),
        fixed_preset=fixed_preset,
        fixed_settings=dict(fixed_settings or {}),
        also=also,
        url=url,
    )
