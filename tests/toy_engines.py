"""An engine of one's own: an exhaustive depth-first search, in one module, for the test that adding
an engine takes that module and one registration and nothing else (test_engine_registration.py)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from kmc.checker.engines.api import Engine, EngineTask, OptionSpec
from kmc.checker.result import CheckResult, Stats, Trace
from kmc.checker.search.kernel import PropertyChecks, expand, initial_states, peak_rss, search_result


class DepthFirstEngine(Engine):
    """Exhaustive, depth first: the same states as bfs, its traces not the shortest."""

    name: ClassVar[str] = "toy-dfs"
    bounds: ClassVar[frozenset[str]] = frozenset({"max_states", "keep_going"})
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec(
            "order",
            str,
            "which successor to follow first.",
            default="first",
            choices=("first", "last"),
            toml="dfs_order",
            flag="--dfs-order",
        ),
    )
    exhaustive: ClassVar[bool] = True

    def run(self, task: EngineTask) -> CheckResult:
        model, props, bounds = task.model, task.props, task.bounds
        checks = PropertyChecks(model, props, bounds.keep_going)
        parent: dict[Any, Any] = {}
        stack: list[Any] = []
        start, generated, cut = time.perf_counter(), 0, None

        def trace_to(state: Any) -> Trace:
            path = [state]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]][1])
            path.reverse()
            actions = [None, *(parent[s][0] for s in path[1:])]
            return Trace(states=path, actions=actions)

        def reach(state: Any, via: Any) -> None:
            nonlocal cut
            if state in parent:
                return
            if bounds.max_states is not None and len(parent) == bounds.max_states:
                cut, checks.stop = f"max states {bounds.max_states}", True
                return
            parent[state] = via
            stack.append(state)
            for observer in task.observers:
                observer.state(state)
            checks.check_state(state, lambda: trace_to(state))

        for state in initial_states(model):
            generated += 1
            reach(state, None)
        while stack and not checks.stop:
            state = stack.pop()
            succs = expand(model, state)
            for observer in task.observers:
                observer.expanded(state, succs, True)
            generated += len(succs)
            ordered = succs if task.options["order"] == "last" else list(reversed(succs))
            for action, nxt in ordered:
                reach(nxt, (action, state))
                if checks.stop:
                    break
        stats = Stats(
            distinct_states=len(parent),
            generated_states=generated,
            elapsed_s=time.perf_counter() - start,
            peak_memory_bytes=peak_rss(),
        )
        return search_result(
            "toy-dfs",
            model,
            props,
            False,
            False,
            checks.found(),
            complete=cut is None and not checks.stop,
            stats=stats,
            bound_reason=cut,
            preset=task.preset,
        )
