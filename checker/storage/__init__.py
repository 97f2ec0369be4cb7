"""How searches store states: stable fingerprints of a canonical encoding (with its C twin), the
fingerprint set that spills to disk, and the authenticated checkpoints of bfs and spark."""
