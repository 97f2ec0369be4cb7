"""What the models share: immutable tuples changed one element at a time (tuples.py); the C twins'
shared header (_c/tuples.h), the generator of each twin's fields.h from its NamedTuples
(c_fields.py) and the twins' build, sanitizers included (build_twins.py)."""
