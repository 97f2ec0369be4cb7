"""Errors that the CLI turns into one line on stderr and exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: unknown name, bad value, broken spec file, malformed trace.

    The message is shown to the user as is, so it says what was wrong and what to do.
    """


class MissingFileError(UserError):
    """A file the user named is not there; ``kind`` says which ("model file", "spec file"), so that a
    command can add what to do about it."""

    def __init__(self, kind: str, path: object) -> None:
        self.kind = kind
        self.path = path
        super().__init__(f"{kind} not found: {path}")


class PropertyError(UserError):
    """A property raised instead of returning a verdict."""

    def __init__(self, prop_name: str, state: object, exc: BaseException) -> None:
        self.prop_name = prop_name
        self.state = state
        self.exc = exc
        super().__init__(f"property {prop_name} raised {type(exc).__name__}: {exc} -- in state {state!r}")


class PropertyTypeError(UserError):
    """A property returned something other than a bool: its verdict cannot be trusted."""

    def __init__(self, prop_name: str, state: object, value: object) -> None:
        self.prop_name = prop_name
        self.value = value
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        super().__init__(
            f"property {prop_name} returned {shown} of type {type(value).__name__}, not a bool "
            f"(return True or False) -- in state {state!r}"
        )


class NondeterministicModelError(UserError):
    """A model's successors differ between two calls on the same state."""
