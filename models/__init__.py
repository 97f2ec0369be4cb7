"""kmc.models: Kafka's protocols as state machines, one package per model (its model, state types,
config and presets, actor files, drawing, z3 encoding, and its successor function in C under
_c/); common/ holds what they share. Each model is registered under the kmc.models entry points."""
