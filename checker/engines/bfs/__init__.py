"""The exhaustive breadth-first search, the reference engine: in memory (memory.py) or with its
visited set and levels spilled to disk and checkpointed (disk.py); options.py holds one search's
settings, engine.py is the engine."""
