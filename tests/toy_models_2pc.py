"""Properties of the toy two-phase-commit model."""

from kmc.checker import invariant


@invariant
def Consistent(s) -> bool:  # type: ignore[no-untyped-def]
    """No participant commits while another aborts."""
    return not ("committed" in s.participants and "aborted" in s.participants)
