"""The hypothesis engine: the model as a Hypothesis state machine (machine.py), what the runs of a
check have reached, shared between them (reached.py), running a check (check.py), one check's
settings (options.py) and the engine (engine.py)."""
