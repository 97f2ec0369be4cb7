"""Helpers for states built from tuples."""

from __future__ import annotations


def put(items: tuple, index: int, value: object) -> tuple:
    """``items`` with the element at ``index`` replaced: a state's per-broker tuples are immutable."""
    return (*items[:index], value, *items[index + 1 :])
