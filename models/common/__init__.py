"""Helpers the models share: immutable tuples changed one element at a time, and (in _c/) the C
helpers of the models' successor functions."""
