"""Kafka's bugs as the models declare them: a JIRA links to Apache's tracker, a KIP to its index."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kmc.checker import KnownBug

JIRA = "https://issues.apache.org/jira/browse/"
KIPS = "https://cwiki.apache.org/confluence/display/KAFKA/Kafka+Improvement+Proposals"


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
    or "finding" for one the models found; the link goes to the JIRA named first."""
    jiras = [k for k in (key, *also) if k.startswith("KAFKA-")]
    url = JIRA + jiras[0] if jiras else KIPS if key.startswith("KIP-") else None
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
