"""Share groups (KIP-932) at the group coordinator: membership, assignment, state initialization."""
