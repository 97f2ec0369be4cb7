"""Conformance: a model held at every reachable step to a reference implementation. oracle.py is
what an oracle is (the API kmc.oracles and oracles of one's own implement); run.py runs the
comparison as a search and writes a mismatch as a trace."""
