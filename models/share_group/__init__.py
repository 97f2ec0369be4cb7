"""Share groups (KIP-932): the share-partition leader's in-flight records, acquisition locks and
persisted state."""
