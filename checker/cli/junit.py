"""JUnit XML, the format every CI system shows as test results."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from kmc.checker.outputs import write_atomically


@dataclass
class Case:
    name: str
    classname: str
    seconds: float
    failure: str | None = None
    error: str | None = None
    output: str = ""


def write_junit(path: str | Path, suite_name: str, cases: list[Case]) -> None:
    suite = ET.Element(
        "testsuite",
        name=suite_name,
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c.failure)),
        errors=str(sum(1 for c in cases if c.error)),
        time=f"{sum(c.seconds for c in cases):.3f}",
    )
    for case in cases:
        element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name, time=f"{case.seconds:.3f}")
        if case.failure:
            ET.SubElement(element, "failure", message=case.failure.splitlines()[0]).text = case.failure
        if case.error:
            ET.SubElement(element, "error", message=case.error.splitlines()[0]).text = case.error
        if case.output:
            ET.SubElement(element, "system-out").text = case.output
    tree = ET.ElementTree(suite)
    ET.indent(tree)
    buffer = io.BytesIO()
    tree.write(buffer, encoding="utf-8", xml_declaration=True)
    write_atomically(Path(path), buffer.getvalue())
