"""z3: the symbolic encoding a model may provide (encoding.py), bounded model checking (bmc.py, the
bmc engine in engine.py) and inductive invariants (induction.py, `kmc prove`)."""
