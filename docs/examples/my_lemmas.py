# my_lemmas.py
from kmc.checker import lemma


@lemma
def HwWithinLog(enc, v):
    import z3

    return z3.And([v.hw[r] <= v.logEnd[r] for r in range(enc.n)])
