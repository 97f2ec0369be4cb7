"""The hypothesis engine: the model as a Hypothesis state machine (machine.py), the runs' shared
exploration (explored.py), running a check (check.py) and the engine (engine.py)."""
