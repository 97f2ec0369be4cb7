"""Campaigns as entries of a `kmc ci` suite::

    [[campaign]]
    name = "acks=1 loses acknowledged writes when the leader is cut off"
    expect = "violated"                           # holds | violated
    expect_findings = ["AcknowledgedWriteNeverLost"]
    duration_s = 30
    workload = { acks = "1", idempotent = false }
    steps = [{ at_s = 5, action = "partition-leader" }, { at_s = 20, action = "heal" }]

Every other key is a campaign's (``kmc campaign --config`` reads the same table). The run directory
is ``<out>/campaigns/<name>`` (``kmc ci --out``), else ``kmc-out/campaigns/<name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.campaign import CampaignSpec, run_campaign

EXPECTATIONS = ("holds", "violated")


@dataclass
class CampaignJob:
    name: str
    spec: CampaignSpec
    expect: str
    expect_findings: list[str] = field(default_factory=list)
    kind: str = "campaign"

    def run(self, out_dir: Path | None) -> tuple[bool, str]:
        base = out_dir if out_dir is not None else Path("kmc-out")
        self.spec.run_dir = base / "campaigns" / _slug(self.name)
        result = run_campaign(self.spec)
        found = sorted({f.check for f in result.findings})
        unexplained = [t.trace for t in (result.validation.traces if result.validation else []) if not t.ok]
        verdict = result.verdict
        problems = []
        if verdict != self.expect:
            problems.append(f"expected {self.expect}, but the campaign gave {verdict}")
        missing = [name for name in self.expect_findings if name not in found]
        if missing:
            problems.append(f"expected findings of {', '.join(missing)}, found {', '.join(found) or 'none'}")
        ops = result.operations
        summary = (
            f"{verdict}: {ops.get('ok', 0)} ok operations, {result.faults} faults, "
            f"findings {', '.join(found) or 'none'}"
            + (f", unexplained metadata in {', '.join(unexplained)}" if unexplained else "")
            + f" ({self.spec.run_dir})"
        )
        return not problems, "; ".join(problems) or summary


def load_campaign(raw: dict[str, Any], base: Path, where: str) -> CampaignJob:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}: a campaign needs a name")
    expect = raw.get("expect", "holds")
    if expect not in EXPECTATIONS:
        raise UserError(f"{where}: 'expect' must be one of {', '.join(EXPECTATIONS)}")
    findings = raw.get("expect_findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        raise UserError(f"{where}: 'expect_findings' must be a list of check names")
    if findings and expect != "violated":
        raise UserError(f"{where}: 'expect_findings' goes with expect = \"violated\"")
    spec = CampaignSpec.from_mapping(raw, base / "kmc-out", where)
    return CampaignJob(name, spec, expect, findings)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:60] or "campaign"
