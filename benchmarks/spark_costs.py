"""Where the Spark engine's time goes, per state, without Spark: the work every state costs there
that the single-process BFS does not do.

    python benchmarks/spark_costs.py [--depth 16]

It runs the BFS of replication kip-320-first-try with 3 replicas to a depth, then times, on that
level's states: computing the successors; fingerprinting them (BFS keeps states, Spark must
fingerprint to shard); pickling the new successors one by one (what a Spark task ships) and as
one list (parts shared between states written once); and unpickling a state. CPU time, so a
busy machine skews it less.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import time

from kmc.checker.bfs import expand
from kmc.checker.fingerprint import fingerprint
from kmc.checker.registry import load_model_class


def per_state(seconds: float, count: int) -> float:
    return round(seconds / count * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=16)
    args = parser.parse_args()
    model = load_model_class("replication").build("kip-320-first-try", {"replicas": 3})
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
    start = time.process_time()
    successors = [expand(model, state) for state in frontier]
    t_expand = time.process_time() - start
    start = time.process_time()
    by_fp = {fingerprint(nxt): nxt for succs in successors for _action, nxt in succs}
    t_fp = time.process_time() - start
    candidates = list(by_fp.values())
    start = time.process_time()
    blobs = [pickle.dumps(state, pickle.HIGHEST_PROTOCOL) for state in candidates]
    t_dumps_each = time.process_time() - start
    start = time.process_time()
    pickle.dumps(candidates, pickle.HIGHEST_PROTOCOL)
    t_dumps_list = time.process_time() - start
    start = time.process_time()
    for blob in blobs:
        pickle.loads(blob)
    t_loads_each = time.process_time() - start
    row = {
        "depth": args.depth,
        "states": count,
        "successors_per_state": round(sum(map(len, successors)) / count, 2),
        "candidates_per_state": round(len(candidates) / count, 2),
        "us_per_state": {
            "successors": per_state(t_expand, count),
            "fingerprint_successors": per_state(t_fp, count),
            "pickle_candidates_one_by_one": per_state(t_dumps_each, count),
            "pickle_candidates_as_one_list": per_state(t_dumps_list, count),
            "unpickle_candidates_one_by_one": per_state(t_loads_each, count),
        },
        "bytes_per_candidate": round(sum(map(len, blobs)) / len(blobs)),
    }
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
