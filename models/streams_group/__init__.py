"""Streams groups (KIP-1071): the model (model.py), its state types (state.py), its flags and presets
(config.py), the server-side sticky task assignor (assignor.py) and its drawing (drawing.py)."""
