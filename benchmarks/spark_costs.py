"""Where the Spark engine's time goes, per state, without Spark: the work every state costs there
that the single-process BFS does not do.

    python benchmarks/spark_costs.py [--depth 16] [--model kraft-replication]

It runs the BFS of a model (replication kip-320-first-try with 3 replicas; or kraft-replication
with 3 brokers, one record and leader epochs up to 2) to a depth, then times, on that level's
states: computing the successors; fingerprinting them (BFS keeps states, Spark must
fingerprint to shard), with the C encoder and with the pure-Python one; fingerprinting them and
keeping each one's least parent, as a task gathers a level's candidates; pickling the level as one
list and unpickling it, as it is and with equal fields interned first (what a frontier file
costs); and the successors and their fingerprints again, of the unpickled states, which no longer
share their parts with the states the model has seen. CPU time, so a busy machine skews it less.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import pickle
import time

from kmc.checker.registry import load_model_class
from kmc.checker.search.kernel import expand
from kmc.checker.storage.checkpoint import interned as _interned

fp_module = importlib.import_module("kmc.checker.storage.fingerprint")
fingerprint = fp_module.fingerprint


def python_fingerprint(value: object) -> int:
    """The pure-Python fingerprint (the same number), for comparison."""
    return fp_module._hash_python(value)


MODELS = {
    "replication": ("replication", "kip-320-first-try", {"replicas": 3}),
    "kraft-replication": ("kraft-replication", None, {"brokers": 3, "max_records": 1, "max_leader_epoch": 2}),
}


def per_state(seconds: float, count: int) -> float:
    return round(seconds / count * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--model", choices=sorted(MODELS), default="replication")
    args = parser.parse_args()
    name, preset, overrides = MODELS[args.model]
    model = load_model_class(name).build(preset, overrides)
    gc.disable()
    seen: set = set()
    frontier = list(model.init_states())
    for _ in range(args.depth - 1):
        level = []
        for state in frontier:
            for _action, nxt in expand(model, state):
                if nxt not in seen:
                    seen.add(nxt)
                    level.append(nxt)
        frontier = level
    count = len(frontier)

    def timed(work):  # CPU seconds, and what the work returned
        begin = time.process_time()
        out = work()
        return time.process_time() - begin, out

    t_expand, successors = timed(lambda: [expand(model, state) for state in frontier])
    t_fp, fps = timed(lambda: [fingerprint(nxt) for succs in successors for _action, nxt in succs])
    t_fp_python, python_fps = timed(lambda: [python_fingerprint(nxt) for succs in successors for _action, nxt in succs])
    assert fps == python_fps

    def gather() -> int:  # what a task does with them: fingerprint, and keep each one's least parent
        gathered = fp_module.candidates()
        for parent, succs in zip(fps_of_frontier, successors, strict=True):
            gathered.add(succs, parent)
        return len(gathered)

    fps_of_frontier = [fingerprint(state) for state in frontier]
    t_gather, _ = timed(gather)
    t_dumps, blob = timed(lambda: pickle.dumps(frontier, pickle.HIGHEST_PROTOCOL))
    t_loads, fresh = timed(lambda: pickle.loads(blob))
    t_intern, interned = timed(lambda: _interned(fresh))
    t_dumps_interned, interned_blob = timed(lambda: pickle.dumps(interned, pickle.HIGHEST_PROTOCOL))
    t_expand_fresh, fresh_successors = timed(lambda: [expand(model, state) for state in fresh])
    t_fp_fresh, _ = timed(lambda: [fingerprint(nxt) for succs in fresh_successors for _action, nxt in succs])
    row = {
        "model": args.model,
        "depth": args.depth,
        "states": count,
        "successors_per_state": round(sum(map(len, successors)) / count, 2),
        "us_per_state": {
            "successors": per_state(t_expand, count),
            "fingerprint_successors": per_state(t_fp, count),
            "fingerprint_successors_pure_python": per_state(t_fp_python, count),
            "fingerprint_and_gather_candidates": per_state(t_gather, count),
            "pickle_as_one_list": per_state(t_dumps, count),
            "unpickle_the_list": per_state(t_loads, count),
            "intern_equal_fields_of_the_unpickled": per_state(t_intern, count),
            "pickle_them_interned": per_state(t_dumps_interned, count),
            "successors_of_unpickled_states": per_state(t_expand_fresh, count),
            "fingerprint_their_successors": per_state(t_fp_fresh, count),
        },
        "bytes_per_state": round(len(blob) / count),
        "bytes_per_state_interned": round(len(interned_blob) / count),
    }
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
