"""A campaign's result as a person reads it, and as JUnit cases."""

from __future__ import annotations

from typing import Any

from kmc.checker.cli.junit import Case


def campaign_text(result: Any, title: str) -> str:
    spec = result.spec
    ops = result.operations
    lines = [
        f"{title}: Kafka {spec.release}, {spec.nodes} nodes, {spec.duration_s:g} s, run directory {spec.run_dir}",
        f"  operations: {ops.get('ok', 0):,} ok, {ops.get('fail', 0):,} failed, {ops.get('info', 0):,} unknown; "
        f"faults: {result.faults}",
        "  history checks:",
    ]
    by_check: dict[str, list[Any]] = {}
    for finding in result.findings:
        by_check.setdefault(finding.check, []).append(finding)
    for name, count in result.checks.items():
        found = by_check.pop(name, [])
        verdict = f"VIOLATED ({len(found)})" if found else ("holds" if count else "not exercised")
        lines.append(f"    {name:28} {verdict:16} {count:,} checked")
    for name, found in by_check.items():  # a check reporting under another name (LeaderEpochsMonotonic)
        lines.append(f"    {name:28} VIOLATED ({len(found)})")
    for finding in result.findings[:20]:
        ops_named = ", ".join(str(i) for i in finding.operations)
        lines.append(f"      {finding.check}: {finding.message} (history events {ops_named})")
    if len(result.findings) > 20:
        lines.append(f"      ... and {len(result.findings) - 20} more in result.json")
    for attribution in result.attributions:
        lines.append(f"      the {attribution.by}'s doing: {attribution.describe()}")
    validation = result.validation
    if validation is not None:
        lines.append("  metadata log against the models:")
        for model, counts in validation.per_model().items():
            lines.append(
                f"    {model:20} {counts['validated']}/{counts['transitions']} transitions explained "
                f"in {counts['traces']} trace(s) of {counts['observed']} observed states"
            )
        for trace in validation.traces:
            if trace.unexplained is not None:
                u = trace.unexplained
                how = "undecided (search cut by its state budget)" if u.undecided else "UNEXPLAINED"
                lines.append(f"      {trace.model} {trace.trace}: observed state {u.index - 1} -> {u.index} {how}")
            for index, prop in trace.invariant_violations:
                lines.append(f"      {trace.model} {trace.trace}: {prop} VIOLATED on observed state {index}")
        for model, label, prop in validation.snapshot_violations:
            lines.append(f"      {model}: {prop} VIOLATED on {label}")
        for path in validation.files:
            lines.append(f"      observed trace: {path} (kmc show / kmc render)")
    if result.client_errors:
        lines.append(f"  client errors: {'; '.join(result.client_errors[:3])}")
    for error in result.errors:
        lines.append(f"  not checked: {error}")
    if result.not_exercised:
        lines.append(f"  not exercised: {', '.join(result.not_exercised)}")
    lines.append(f"  verdict: {result.verdict} ({result.elapsed_s:.1f} s)")
    return "\n".join(lines)


def campaign_cases(result: Any) -> list[Case]:
    """One JUnit case per history check and per validated model."""
    cases = []
    names = list(result.checks) + sorted({f.check for f in result.findings} - set(result.checks))
    for name in names:
        count = result.checks.get(name)
        found = [f for f in result.findings if f.check == name]
        cases.append(
            Case(
                name=name,
                classname="kmc.campaign.history",
                seconds=0.0,
                failure="\n".join(f.message for f in found) or None,
                output=f"{count} checked" if count else "not exercised",
            )
        )
    if result.validation is not None:
        for model, counts in result.validation.per_model().items():
            cases.append(
                Case(
                    name=f"{model} trace validation",
                    classname="kmc.campaign.validation",
                    seconds=sum(t.elapsed_s for t in result.validation.traces if t.model == model),
                    failure="\n".join(validation_failures(result.validation, model)) or None,
                    output=f"{counts['validated']}/{counts['transitions']} transitions explained",
                )
            )
    for error in result.errors:
        cases.append(Case(name="not checked", classname="kmc.campaign", seconds=0.0, failure=error, output=""))
    return cases


def validation_failures(validation: Any, model: str) -> list[str]:
    """Why one model's validation failed: unexplained or undecided transitions, violated invariants."""
    out = []
    for trace in validation.traces:
        if trace.model != model:
            continue
        if trace.unexplained is not None:
            how = "undecided" if trace.unexplained.undecided else "not explained"
            out.append(
                f"{trace.trace}: observed state {trace.unexplained.index - 1} -> {trace.unexplained.index} {how}"
            )
        out += [f"{trace.trace}: {prop} violated on observed state {i}" for i, prop in trace.invariant_violations]
    out += [f"{label}: {prop} violated" for m, label, prop in validation.snapshot_violations if m == model]
    return out
