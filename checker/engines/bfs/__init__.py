"""The exhaustive breadth-first search, the reference engine: in memory (memory.py) or with its
visited set and levels spilled to disk and checkpointed (disk.py); engine.py is the engine."""
