"""The explorer's state space, on demand: what `kmc explore`'s page asks, answered from the model hooks.

The explorer never enumerates the state space: it keeps the path the user is on as a list of
indices (the initial state's, then at each step the successor's position in ``successors()``)
and recomputes states from it, with a bounded cache of successor lists. It uses only the hooks
the engines use (``init_states``, ``successors``, ``within_bounds``, ``drawing()``) and the
model's properties, so it works for every model with no per-model code.

A link names the path by action labels (as traces name them), so a link made before a model
changed either still means the same steps or fails with a message saying which step no longer
applies.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash
from kmc.checker.drawing import Drawing, Table, mark_changes
from kmc.checker.errors import PropertyError, UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import Property, holds, select_properties
from kmc.checker.registry import load_model_class, model_reference
from kmc.checker.result import Trace
from kmc.checker.traces.chart import drawing_of, msc_graph, svg_of
from kmc.checker.traces.itf import action_to_json, format_action, format_value, read_trace, state_vars, trace_to_itf
from kmc.checker.traces.text import changes

CACHE_STATES = 20_000
"""Successor lists kept (least recently used first out): enough for long walks, bounded memory."""
MAX_PATH = 100_000
MAX_WALK = 10_000
MAX_CHART_STATES = 300
"""Longer paths are not drawn: graphviz would take too long for an interactive page."""
SHORTEST_MAX_STATES = 200_000
SHORTEST_SECONDS = 30.0
_AMBIGUOUS = re.compile(r"^(.*)#(\d+)$", re.DOTALL)


class PathError(UserError):
    """A path (from the page or a link) that does not denote a walk of this model."""


def label_of(action: Action) -> str:
    """An action as traces name it, e.g. ``BecomeFollower(replica=1, leader=0, leaderEpoch=2)``."""
    return format_action(action_to_json(action))


@dataclass
class Walk:
    """A resolved path: the states and the actions between them (actions[0] is None)."""

    path: list[int]
    states: list[State]
    actions: list[Action | None]


@dataclass
class _Cache:
    """A small LRU map, shared by the server's threads."""

    limit: int
    items: OrderedDict[Hashable, Any] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: Hashable) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.limit:
                self.items.popitem(last=False)


class Explorer:
    """One model, one configuration, its properties: everything the page asks is computed here."""

    def __init__(
        self,
        model: str,
        preset: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        spec_files: Sequence[str | Path] = (),
    ) -> None:
        cls = load_model_class(model)
        self.model_arg = model
        self.model: Model = cls.build(preset, overrides)
        self.preset = preset if preset is not None else cls.default_preset
        props = select_properties(cls, spec_files)
        self.invariants: list[tuple[Property, Any]] = [(p, p.bind(self.model)) for p in props.invariants]
        self.step_props: list[tuple[Property, Any]] = [(p, p.bind(self.model)) for p in props.steps]
        self.liveness = props.liveness
        self.drawing = drawing_of(self.model)
        self.has_tables = type(self.drawing).tables is not Drawing.tables
        self.inits: list[State] = list(self.model.init_states())
        if not self.inits:
            raise UserError(f"model {self.model.name} has no initial state: nothing to explore")
        self.config = self.model.config_dict()
        text = json.dumps([self.model.name, self.config], sort_keys=True, default=str)
        self.config_id = xxhash.xxh3_64_hexdigest(text.encode())[:10]
        self._successors = _Cache(CACHE_STATES)
        self._verdicts = _Cache(CACHE_STATES)
        self._charts = _Cache(32)
        self.start: dict[str, Any] | None = None
        """The path to open first, when a trace was given on the command line."""

    # -- naming ----------------------------------------------------------------------------------
    @property
    def title(self) -> str:
        return self.model.name + (f" --preset {self.preset}" if self.preset else "")

    def info(self) -> dict[str, Any]:
        """What the page shows before any state: the model, its config and its properties."""
        return {
            "model": self.model.name,
            "title": self.title,
            "preset": self.preset,
            "config": {
                k: format_value(v) if not isinstance(v, str | int | bool) else v for k, v in self.config.items()
            },
            "config_id": self.config_id,
            "inits": len(self.inits),
            "has_tables": self.has_tables,
            "properties": [
                {"name": p.name, "kind": p.kind, "doc": _first_line(p.doc)}
                for p in [*(p for p, _ in self.invariants), *(p for p, _ in self.step_props), *self.liveness]
            ],
            "limits": {"walk": MAX_WALK, "chart": MAX_CHART_STATES, "shortest": SHORTEST_MAX_STATES},
            "start": self.start,
        }

    # -- the state space, on demand --------------------------------------------------------------
    def successors(self, state: State) -> list[tuple[Action, State]]:
        found = self._successors.get(state)
        if found is None:
            found = list(self.model.successors(state))
            self._successors.put(state, found)
        return found

    def resolve(self, path: Any) -> Walk:
        """The walk a path of indices denotes; a PathError names the first step that does not exist."""
        path = check_path(path)
        if path[0] >= len(self.inits):
            raise PathError(f"the model has {len(self.inits)} initial state(s); there is no initial state #{path[0]}")
        states: list[State] = [self.inits[path[0]]]
        actions: list[Action | None] = [None]
        for k, j in enumerate(path[1:], start=1):
            succ = self.successors(states[-1])
            if j >= len(succ):
                raise PathError(f"step {k}: state {k - 1} has {len(succ)} successor(s), so there is no successor #{j}")
            actions.append(succ[j][0])
            states.append(succ[j][1])
        return Walk(path, states, actions)

    def tokens(self, walk: Walk) -> list[str]:
        """The path's steps by label; ``label#n`` when n successors share a label (labels end in ')')."""
        out = []
        for k in range(1, len(walk.path)):
            succ = self.successors(walk.states[k - 1])
            out.append(_token(succ, walk.path[k]))
        return out

    def from_tokens(self, init: Any, steps: Any) -> list[int]:
        """Indices for a path named by labels, as a link names it."""
        if isinstance(init, str) and init.strip().isdigit():
            init = int(init)
        if not isinstance(init, int) or isinstance(init, bool) or not 0 <= init < len(self.inits):
            raise PathError(f"bad initial state {init!r}: the model has {len(self.inits)} initial state(s)")
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise PathError("malformed path: the steps must be a list of action labels")
        if len(steps) > MAX_PATH:
            raise PathError(f"path too long: {len(steps)} steps (at most {MAX_PATH})")
        path = [init]
        state = self.inits[init]
        for k, token in enumerate(steps, start=1):
            succ = self.successors(state)
            labels = [label_of(a) for a, _ in succ]
            j = _index_of(labels, token)
            if j is None:
                enabled = sorted(set(labels))
                shown = ", ".join(enabled[:8]) + (f" and {len(enabled) - 8} more" if len(enabled) > 8 else "")
                raise PathError(
                    f"step {k}: {token} is not enabled in state {k - 1}; enabled there: {shown or 'nothing'}"
                )
            path.append(j)
            state = succ[j][1]
        return path

    # -- properties ------------------------------------------------------------------------------
    def verdicts(self, state: State) -> dict[str, str]:
        """Invariant name -> "holds", "violated" or "error: ..." in this state (cached)."""
        cached = self._verdicts.get(state)
        if cached is None:
            cached = {p.name: _verdict(p.name, pred, state) for p, pred in self.invariants}
            self._verdicts.put(state, cached)
        return cached

    def step_verdicts(self, before: State, action: Action, after: State) -> dict[str, str]:
        return {p.name: _verdict(p.name, pred, before, action, after) for p, pred in self.step_props}

    def violated_at(self, walk: Walk, k: int) -> list[str]:
        """The properties violated at step k: invariants in its state, step properties by its step."""
        bad = [name for name, v in self.verdicts(walk.states[k]).items() if v != "holds"]
        if k > 0 and self.step_props:
            action = walk.actions[k]
            assert action is not None
            verdicts = self.step_verdicts(walk.states[k - 1], action, walk.states[k])
            bad += [name for name, v in verdicts.items() if v != "holds"]
        return bad

    # -- what the page shows -------------------------------------------------------------------
    def view(self, path: Any, at: Any = None) -> dict[str, Any]:
        """The whole path (one line per step) and, in full, the state at step ``at``."""
        walk = self.resolve(path)
        at = len(walk.path) - 1 if at is None else _int(at, "at")
        if not 0 <= at < len(walk.path):
            raise PathError(f"step {at} is not on the path (it has steps 0 to {len(walk.path) - 1})")
        steps = []
        for k in range(len(walk.path)):
            action = walk.actions[k]
            steps.append(
                {
                    "label": "Init" if action is None else label_of(action),
                    "violated": self.violated_at(walk, k),
                    "in_bounds": self.model.within_bounds(walk.states[k]),
                }
            )
        return {
            "path": walk.path,
            "at": at,
            "init": walk.path[0],
            "tokens": self.tokens(walk),
            "steps": steps,
            "state": self.state_view(walk, at),
            "chart_too_long": len(walk.path) > MAX_CHART_STATES,
        }

    def state_view(self, walk: Walk, k: int) -> dict[str, Any]:
        state = walk.states[k]
        action = walk.actions[k]
        before = walk.states[k - 1] if k > 0 else None
        vars_now = state_vars(state)
        vars_before = state_vars(before) if before is not None else None
        diff = changes(vars_before, vars_now) if vars_before is not None else []
        changed_top = {_top(p) for p, _old, _new in diff}
        fields = [
            {"name": name, "value": format_value(value), "changed": name in changed_top}
            for name, value in vars_now.items()
        ]
        tables: list[Table] = []
        if self.has_tables:
            tables = self.drawing.tables(state)
            if before is not None:
                tables = mark_changes(self.drawing.tables(before), tables)
        invariants = self.verdicts(state)
        step_verdicts = self.step_verdicts(before, action, state) if before is not None and action is not None else {}
        succ = self.successors(state)
        next_on_path = walk.path[k + 1] if k + 1 < len(walk.path) else None
        successors = []
        for j, (a, t) in enumerate(succ):
            successors.append(
                {
                    "index": j,
                    "name": a.name,
                    "label": label_of(a),
                    "violates": [n for n, v in self.verdicts(t).items() if v != "holds"]
                    + [n for n, v in self.step_verdicts(state, a, t).items() if v != "holds"],
                    "in_bounds": self.model.within_bounds(t),
                    "stutter": t == state,
                    "on_path": j == next_on_path,
                }
            )
        return {
            "index": k,
            "label": "Init" if action is None else label_of(action),
            "action": action_to_json(action),
            "tables": [_table_json(t) for t in tables],
            "fields": fields,
            "changes": [{"path": p, "before": format_value(a), "after": format_value(b)} for p, a, b in diff],
            "invariants": [
                {"name": p.name, "doc": _first_line(p.doc), "verdict": invariants[p.name]} for p, _ in self.invariants
            ],
            "step_properties": [
                {"name": p.name, "doc": _first_line(p.doc), "verdict": step_verdicts.get(p.name, "n/a")}
                for p, _ in self.step_props
            ],
            "liveness": [{"name": p.name, "kind": p.kind, "doc": _first_line(p.doc)} for p in self.liveness],
            "in_bounds": self.model.within_bounds(state),
            "deadlock": not succ,
            "successors": successors,
        }

    def chart(self, path: Any) -> str:
        """The path's message-sequence chart as SVG (graphviz), cached per path."""
        walk = self.resolve(path)
        if len(walk.path) > MAX_CHART_STATES:
            raise UserError(
                f"the path has {len(walk.path)} states: charts are drawn for paths of at most {MAX_CHART_STATES}"
            )
        key = tuple(walk.path)
        svg = self._charts.get(key)
        if svg is None:
            trace = Trace(states=walk.states, actions=walk.actions)
            svg = svg_of(msc_graph(self.model, trace, f"{self.title} (explore)"))
            self._charts.put(key, svg)
        return svg

    # -- moving around ---------------------------------------------------------------------------
    def walk(self, path: Any, at: Any, steps: Any, seed: Any = None, stop_on_violation: bool = True) -> dict[str, Any]:
        """A random walk of up to ``steps`` steps from step ``at``; it stops at a state without
        successor, outside the model's bounds, or (if asked) at a violation."""
        walk = self.resolve(path)
        at = _int(at, "at")
        if not 0 <= at < len(walk.path):
            raise PathError(f"step {at} is not on the path")
        n = _int(steps, "steps")
        if not 1 <= n <= MAX_WALK:
            raise UserError(f"a random walk takes 1 to {MAX_WALK:,} steps, not {n}")
        if seed in (None, ""):
            seed = random.randrange(1_000_000)
        seed = _int(seed, "seed")
        rng = random.Random(seed)
        new_path = walk.path[: at + 1]
        state = walk.states[at]
        stopped = ""
        taken = 0
        while taken < n:
            succ = self.successors(state)
            if not succ:
                stopped = "a state with no successor"
                break
            j = rng.randrange(len(succ))
            before = state
            action, state = succ[j]
            new_path.append(j)
            taken += 1
            if not self.model.within_bounds(state):
                stopped = "a state outside the model's bounds"
                break
            if stop_on_violation:
                bad = [name for name, v in self.verdicts(state).items() if v != "holds"]
                bad += [name for name, v in self.step_verdicts(before, action, state).items() if v != "holds"]
                if bad:
                    stopped = f"a violation of {', '.join(bad)}"
                    break
        message = f"random walk (seed {seed}): {taken} step(s) from step {at}"
        message += f"; stopped at {stopped}" if stopped else ""
        return {"path": new_path, "at": len(new_path) - 1, "message": message, "seed": seed}

    def shortest(self, path: Any, at: Any, max_states: Any = None) -> dict[str, Any]:
        """A shortest path from the initial states to the state at step ``at``, by a bounded BFS."""
        walk = self.resolve(path)
        at = _int(at, "at")
        if not 0 <= at < len(walk.path):
            raise PathError(f"step {at} is not on the path")
        limit = SHORTEST_MAX_STATES if max_states in (None, "") else _int(max_states, "max_states")
        if limit < 1:
            raise UserError("max_states must be at least 1")
        target = walk.states[at]
        parents: dict[State, tuple[State | None, int]] = {}
        queue: deque[tuple[State, int]] = deque()
        for i, s in enumerate(self.inits):
            if s not in parents:
                parents[s] = (None, i)
                queue.append((s, 0))
        deadline = time.monotonic() + SHORTEST_SECONDS
        depth = 0
        found = target in parents
        while queue and not found:
            state, depth = queue.popleft()
            if len(parents) >= limit or time.monotonic() > deadline:
                break
            for j, (_a, t) in enumerate(self.model.successors(state)):
                if t not in parents:
                    parents[t] = (state, j)
                    if t == target:
                        found = True
                        break
                    queue.append((t, depth + 1))
        if not found:
            why = "seconds" if time.monotonic() > deadline else "states"
            bound = f"{SHORTEST_SECONDS:.0f} seconds" if why == "seconds" else f"{limit:,} states"
            return {
                "found": False,
                "message": f"no path to step {at}'s state found within {bound} "
                f"(breadth-first search explored {len(parents):,} states, down to depth {depth}); "
                f"the path you took ({at} steps) stays",
            }
        indices: list[int] = []
        node: State | None = target
        while node is not None:
            parent, j = parents[node]
            indices.append(j)
            node = parent
        indices.reverse()
        steps = len(indices) - 1
        return {
            "found": True,
            "path": indices,
            "at": steps,
            "message": f"shortest path: {steps} step(s) (breadth-first search, {len(parents):,} states explored); "
            f"the path you took had {at}",
        }

    # -- traces in and out -----------------------------------------------------------------------
    def open_trace(self, doc: Any, name: str = "trace") -> dict[str, Any]:
        """Indices for an ITF trace of this model and config; a UserError says why it does not apply."""
        doc = validate_trace(doc, name)
        meta = doc["#meta"]
        if meta["model"] != self.model.name:
            raise UserError(
                f"{name} is a trace of model {meta['model']}, but this explorer runs {self.model.name}: "
                f"start `kmc explore {name}` to walk it on the model and config it names"
            )
        config = meta.get("config") or {}
        if not isinstance(config, dict):
            raise UserError(f"malformed trace {name}: '#meta'.config must be an object")
        theirs = type(self.model).make_config(None, config)
        if theirs != self.model.config:
            ours = self.model.config_dict()
            other = type(self.model)(theirs).config_dict()
            diff = ", ".join(f"{k}={other[k]!r} (here {ours[k]!r})" for k in ours if ours[k] != other.get(k))
            raise UserError(
                f"{name} was made with another configuration of {self.model.name}: {diff}; "
                f"start `kmc explore {name}` to walk it on its own"
            )
        itf_states = [{k: v for k, v in s.items() if k != "#meta"} for s in doc["states"]]
        first = next((i for i, s in enumerate(self.inits) if state_vars(s) == itf_states[0]), None)
        if first is None:
            raise UserError(f"{name} does not apply: its state 0 is not an initial state of {self.model.name}")
        path = [first]
        state = self.inits[first]
        for k in range(1, len(itf_states)):
            want = doc["states"][k]["#meta"]["action"]
            want = {"name": want["name"], "args": want.get("args", {})}
            succ = self.successors(state)
            candidates = [j for j, (a, _t) in enumerate(succ) if action_to_json(a) == want]
            if not candidates:
                raise UserError(
                    f"{name} does not apply: step {k}: {format_action(want)} is not enabled in state {k - 1}"
                )
            j = next((j for j in candidates if state_vars(succ[j][1]) == itf_states[k]), None)
            if j is None:
                raise UserError(f"{name} does not apply: step {k}: after {format_action(want)} the state differs")
            path.append(j)
            state = succ[j][1]
        what = f"{len(path)} states"
        if meta.get("property"):
            what += f", {meta['property']} {'violated' if meta.get('engine') != 'explore' else 'in its metadata'}"
        if doc.get("loop") is not None:
            what += f"; its loop back to state {doc['loop']} is not followed"
        return {"path": path, "at": 0, "message": f"opened {name}: {what}. Forward (or →) walks it."}

    def itf(self, path: Any) -> dict[str, Any]:
        """The path as an ITF trace that `kmc replay` accepts; its property is the first one violated
        at the last step, if any."""
        walk = self.resolve(path)
        last = len(walk.path) - 1
        bad = self.violated_at(walk, last)
        kinds = {p.name: p.kind for p, _ in [*self.invariants, *self.step_props]}
        extra: dict[str, Any] = {"kind": kinds[bad[0]] if bad else "path", "path": walk.path}
        reference = model_reference(self.model_arg)
        if reference != self.model.name:
            extra["model_ref"] = reference
        return trace_to_itf(
            Trace(states=walk.states, actions=walk.actions),
            model=self.model.name,
            config=self.config,
            preset=self.preset,
            property=bad[0] if bad else "",
            engine="explore",
            extra_meta=extra,
        )

    def itf_filename(self, path: list[int]) -> str:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.preset or self.model.name)
        return f"{stem}-explore-{len(path) - 1}-steps.itf.json"


def check_path(path: Any) -> list[int]:
    """A path as the API takes it: a non-empty list of non-negative integers."""
    if isinstance(path, str):
        parts = [p for p in re.split(r"[.,\s]+", path.strip()) if p]
        if not parts or not all(p.isdigit() for p in parts):
            raise PathError(f"malformed path {path[:80]!r}: expected numbers separated by dots, e.g. 0.3.1")
        path = [int(p) for p in parts]
    if not isinstance(path, list) or not path:
        raise PathError("malformed path: expected a non-empty list of successor indices")
    if len(path) > MAX_PATH:
        raise PathError(f"path too long: {len(path)} states (at most {MAX_PATH})")
    for k, j in enumerate(path):
        if not isinstance(j, int) or isinstance(j, bool) or j < 0:
            raise PathError(f"malformed path: step {k} is {j!r}, not a non-negative integer")
    return path


def validate_trace(doc: Any, name: str) -> dict[str, Any]:
    """The checks `read_trace` makes on a file, made on a document received from the page."""
    with tempfile.TemporaryDirectory(prefix="kmc-explore-") as tmp:
        target = Path(tmp) / "trace.itf.json"
        target.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
        try:
            return read_trace(target)
        except UserError as exc:
            raise UserError(str(exc).replace(str(target), name)) from None


def _token(succ: list[tuple[Action, State]], j: int) -> str:
    label = label_of(succ[j][0])
    same = [i for i, (a, _t) in enumerate(succ) if label_of(a) == label]
    return label if len(same) == 1 else f"{label}#{same.index(j) + 1}"


def _index_of(labels: list[str], token: str) -> int | None:
    same = [i for i, label in enumerate(labels) if label == token]
    if same:
        return same[0]
    match = _AMBIGUOUS.match(token)
    if match:
        same = [i for i, label in enumerate(labels) if label == match.group(1)]
        n = int(match.group(2))
        if 1 <= n <= len(same):
            return same[n - 1]
    return None


def _verdict(name: str, pred: Any, *args: Any) -> str:
    try:
        return "holds" if holds(name, pred, *args) else "violated"
    except PropertyError as exc:
        return f"error: {type(exc.exc).__name__}: {exc.exc}"


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise UserError(f"{what} must be an integer, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise UserError(f"{what} must be an integer, not {value!r}")


def _top(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _first_line(doc: str) -> str:
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _table_json(table: Table) -> dict[str, Any]:
    return {
        "title": table.title,
        "columns": list(table.columns),
        "rows": [[str(c) for c in row] for row in table.rows],
        "highlight": sorted([r, c] for r, c in table.highlight),
    }
