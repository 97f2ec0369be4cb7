"""`kmc graph`: the model's abstract state diagram, computed from exploration.

Every reachable state is projected onto one field (``--field state`` for a group's coordinator
state, ``--field quorumState.leader`` for the partition leader); the diagram has a node per value
and an edge per (value, action, value) actually taken, labelled with how often it was taken.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import graphviz
import networkx as nx
from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.search.explored import explore_graph
from kmc.checker.traces.itf import format_value, to_itf

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def project(state: Any, path: str) -> Any:
    """The value at a field path such as ``replicaState[1].hw`` (attributes and indexes)."""
    value = state
    for part in path.split("."):
        for name, index in _STEP.findall(part):
            try:
                value = getattr(value, name) if name else value[int(index)]
            except (AttributeError, IndexError, TypeError, KeyError):
                raise UserError(f"state has no field {path!r} (stuck at {name or '[' + index + ']'})") from None
    return value


def abstract_graph(model: Model, field: str, max_states: int | None = 200_000) -> nx.MultiDiGraph:
    """Nodes: the values of ``field``; edges: actions between them, with their counts."""
    graph = explore_graph(model, max_states=max_states)
    inits = {format_value(to_itf(project(s, field))) for s in model.init_states()}
    counts: Counter[tuple[str, str, str]] = Counter()
    values: set[str] = set()
    for state, edges in graph.items():
        source = format_value(to_itf(project(state, field)))
        values.add(source)
        for action, nxt in edges:
            counts[(source, format_value(to_itf(project(nxt, field))), action.name)] += 1
    result = nx.MultiDiGraph(field=field, states=len(graph), complete=max_states is None or len(graph) < max_states)
    for value in sorted(values):
        result.add_node(value, initial=value in inits)
    for (source, target, action), count in sorted(counts.items()):
        result.add_edge(source, target, action=action, count=count)
    return result


def state_diagram(graph: nx.MultiDiGraph, title: str, self_loops: bool = False) -> graphviz.Digraph:
    """The diagram: a box per value (the initial ones doubled and green), an arrow per action between
    two values labelled with how often it was taken; steps that keep the value only with ``self_loops``."""
    diagram = graphviz.Digraph(
        "states",
        graph_attr={"fontname": "Helvetica", "labelloc": "t", "label": graphviz.nohtml(title), "rankdir": "LR"},
        node_attr={
            "fontname": "Helvetica",
            "fontsize": "11",
            "shape": "box",
            "style": "rounded,filled",
            "fillcolor": "#e8eef7",
        },
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )
    ids = {node: f"n{i}" for i, node in enumerate(graph.nodes)}
    for node, data in graph.nodes(data=True):
        initial = {"peripheries": "2", "fillcolor": "#d7f0dd"} if data.get("initial") else {}
        diagram.node(ids[node], label=graphviz.nohtml(str(node)), **initial)
    for source, target, data in graph.edges(data=True):
        if source == target and not self_loops:
            continue
        diagram.edge(ids[source], ids[target], label=graphviz.nohtml(f"{data['action']} ×{data['count']}"))
    return diagram
