"""kmc explore: the JSON API, bad input on the command line and on the page, and the page itself
driven in a real browser (headless Chromium from Debian via Playwright; never a downloaded one).

Each browser test leaves one screenshot under kmc-out/explorer/. With KMC_DOCS_SCREENSHOTS=1 the
last test also retakes the screenshots of docs/explorer.md.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import default_sigint
from kmc.checker.cli.explore import explore
from kmc.checker.errors import UserError
from kmc.checker.explorer.server import ExploreServer, make_server, serve_in_thread
from kmc.checker.traces.itf import format_action, read_trace
from kmc.checker.traces.replay import confirm_violation, replay

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "counterexamples/replication/truncate-to-hw-StrongIsr.itf.json"
OTHER_MODEL_TRACE = ROOT / "counterexamples/group/kafka-12890-SyncCompletes.itf.json"
OTHER_CONFIG_TRACE = ROOT / "counterexamples/replication/kip-101-StrongIsr.itf.json"
SHOTS = ROOT / "kmc-out/explorer"
DOCS = ROOT / "docs"
LABELS = [format_action(s["#meta"]["action"]) for s in read_trace(TRACE)["states"][1:]]
"""The counterexample's nine steps, as the page labels its buttons."""

WIDE_MODEL = '''
from typing import NamedTuple
from kmc.checker import Action, Model, invariant


class Wide(NamedTuple):
    depth: int
    last: int


class WideModel(Model):
    """300 successors per state (three actions, 100 each); depth 2 is out of bounds, depth 3 a deadlock."""

    name = "wide"

    def init_states(self):
        return [Wide(0, 0)]

    def successors(self, s):
        if s.depth >= 3:
            return []
        return [(Action(n, i=i), Wide(s.depth + 1, i)) for n in ("Send", "Receive", "Drop") for i in range(100)]

    def within_bounds(self, s):
        return s.depth < 2


@invariant
def SmallLast(s):
    """The last index taken is below 99."""
    return s.last < 99
'''


def _serve(server: ExploreServer) -> Iterator[ExploreServer]:
    thread = serve_in_thread(server)
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def server() -> Iterator[ExploreServer]:
    yield from _serve(make_server("replication", "truncate-to-hw", port=0))


@pytest.fixture(scope="module")
def wide_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExploreServer]:
    path = tmp_path_factory.mktemp("wide") / "wide_model.py"
    path.write_text(textwrap.dedent(WIDE_MODEL))
    yield from _serve(make_server(f"{path}:WideModel", spec_files=[path], port=0))


def call(server: ExploreServer, route: str, body: Any = None) -> tuple[int, Any]:
    """One API request: (status, decoded JSON). Bytes are sent as they are (to send non-JSON)."""
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        server.url.rstrip("/") + route,
        data=data,
        method="GET" if data is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def counterexample_path(server: ExploreServer) -> list[int]:
    status, body = call(server, "/api/resolve", {"init": 0, "steps": LABELS})
    assert status == 200, body
    return body["path"]


# -- the JSON API ----------------------------------------------------------------------------------
def test_api_model_and_binding(server: ExploreServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    status, info = call(server, "/api/model")
    assert status == 200
    assert info["model"] == "replication" and info["preset"] == "truncate-to-hw"
    assert {"WeakIsr", "StrongIsr", "LeaderInIsr", "LogMatching"} <= {p["name"] for p in info["properties"]}
    assert info["config"]["truncation"] == "hw"
    with urllib.request.urlopen(server.url, timeout=10) as response:
        page = response.read().decode()
    assert "<script>" in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing from elsewhere


def test_api_walks_the_counterexample(server: ExploreServer) -> None:
    path = counterexample_path(server)
    assert len(path) == 10
    status, view = call(server, "/api/view", {"path": path})
    assert status == 200
    assert view["at"] == 9 and view["tokens"] == LABELS
    verdicts = {p["name"]: p["verdict"] for p in view["state"]["invariants"]}
    assert verdicts["StrongIsr"] == "violated" and verdicts["LeaderInIsr"] == "holds"
    assert "StrongIsr" in view["steps"][9]["violated"]
    assert all(not step["violated"] for step in view["steps"][:9])
    assert [s["label"] for s in view["steps"]] == ["Init", *LABELS]
    assert view["state"]["tables"] and view["state"]["changes"]  # the model's Drawing, and what changed
    status, before = call(server, "/api/view", {"path": path, "at": 8})
    assert {p["name"]: p["verdict"] for p in before["state"]["invariants"]}["StrongIsr"] == "holds"
    step_9 = next(s for s in before["state"]["successors"] if s["label"] == LABELS[8])
    assert "StrongIsr" in step_9["violates"] and step_9["on_path"]
    status, start = call(server, "/api/view", {"path": [0]})
    assert "ControllerElectLeader(leader=0)" in [s["label"] for s in start["state"]["successors"]]


def test_api_chart_is_svg(server: ExploreServer) -> None:
    status, body = call(server, "/api/chart", {"path": counterexample_path(server)})
    assert status == 200
    assert body["svg"].startswith("<svg") and "BecomeFollower" in body["svg"]


def test_api_itf_replays(server: ExploreServer, tmp_path: Path, kmc: Any) -> None:
    path = counterexample_path(server)
    with urllib.request.urlopen(server.url + "api/itf?path=" + ".".join(map(str, path)), timeout=30) as response:
        assert "attachment" in response.headers["Content-Disposition"]
        doc = json.loads(response.read())
    target = tmp_path / "explored.itf.json"
    target.write_text(json.dumps(doc))
    done = replay(read_trace(target))
    assert len(done.trace) == 10
    assert confirm_violation(done) in ("WeakIsr", "StrongIsr")
    code, out, _err = kmc("replay", str(target))
    assert code == 0 and "replays on replication (10 states)" in out


def test_api_random_walk_is_reproducible_and_shortest_path(server: ExploreServer) -> None:
    body = {"path": [0], "at": 0, "steps": 30, "seed": 7}
    status, first = call(server, "/api/walk", body)
    assert status == 200 and "seed 7" in first["message"]
    assert call(server, "/api/walk", body)[1]["path"] == first["path"]
    assert 2 <= len(first["path"]) <= 31 and first["at"] == len(first["path"]) - 1
    # a detour (elect, elect, elect) before the counterexample's own steps: BFS finds the 9-step path
    path = counterexample_path(server)
    status, found = call(server, "/api/shortest", {"path": path, "at": 9})
    assert status == 200 and found["found"] and len(found["path"]) == 10
    status, bounded = call(server, "/api/shortest", {"path": path, "at": 9, "max_states": 5})
    assert status == 200 and not bounded["found"] and "no path" in bounded["message"]


def test_api_open_trace(server: ExploreServer) -> None:
    status, opened = call(server, "/api/open", {"name": TRACE.name, "doc": json.loads(TRACE.read_text())})
    assert status == 200 and opened["path"] == counterexample_path(server) and opened["at"] == 0
    status, body = call(server, "/api/open", {"name": "g.json", "doc": json.loads(OTHER_MODEL_TRACE.read_text())})
    assert status == 400 and "trace of model group" in body["error"]
    status, body = call(server, "/api/open", {"name": "k.json", "doc": json.loads(OTHER_CONFIG_TRACE.read_text())})
    assert status == 400 and "another configuration" in body["error"] and "truncation" in body["error"]
    status, body = call(server, "/api/open", {"name": "bad.json", "doc": {"#meta": {"model": "replication"}}})
    assert status == 400 and "malformed trace bad.json" in body["error"]


@pytest.mark.parametrize(
    ("model", "preset", "trace", "prop", "lanes"),
    [
        (
            "streams-group",
            "kafka-4.3",
            "kafka-4.3-EmptyGroupAtAssignmentEpoch",
            "EmptyGroupAtAssignmentEpoch",
            "thread 0",
        ),
        (
            "share-group",
            "pre-kafka-19972",
            "pre-kafka-19972-DeliveriesWithinTheLimit",
            "DeliveriesWithinTheLimit",
            "consumer 0",
        ),
        (
            "share-session",
            "kafka-4.1.0",
            "kafka-4.1.0-NoAcknowledgementsOnTheInitialEpoch",
            "NoAcknowledgementsOnTheInitialEpoch",
            "broker 1",
        ),
    ],
)
def test_the_group_models_open_walk_and_draw(model: str, preset: str, trace: str, prop: str, lanes: str) -> None:
    """The explorer draws the streams-group, share-group and share-session models: a checked-in trace opens, its last
    state shows the violated property with the model's tables, and the chart has the model's lanes."""
    doc = json.loads((ROOT / "counterexamples" / model / f"{trace}.itf.json").read_text())
    for served in _serve(make_server(model, preset, port=0)):
        status, opened = call(served, "/api/open", {"name": f"{trace}.itf.json", "doc": doc})
        assert status == 200, opened
        path = opened["path"]
        assert len(path) == len(doc["states"])
        status, view = call(served, "/api/view", {"path": path, "at": len(path) - 1})
        verdicts = {p["name"]: p["verdict"] for p in view["state"]["invariants"]}
        assert verdicts[prop] == "violated" and view["state"]["tables"]
        status, chart = call(served, "/api/chart", {"path": path})
        assert status == 200 and chart["svg"].startswith("<svg") and lanes in chart["svg"]


@pytest.mark.parametrize(
    ("route", "body", "expected"),
    [
        ("/api/view", {"path": "abc"}, "malformed path"),
        ("/api/view", {"path": []}, "malformed path"),
        ("/api/view", {"path": [0, -1]}, "not a non-negative integer"),
        ("/api/view", {"path": [0, True]}, "not a non-negative integer"),
        ("/api/view", {"path": [3]}, "no initial state #3"),
        ("/api/view", {"path": [0, 999]}, "step 1: state 0 has 4 successor(s)"),
        ("/api/view", {"path": [0], "at": 4}, "step 4 is not on the path"),
        ("/api/view", b"{not json", "not JSON"),
        ("/api/view", b"[1, 2]", "must be a JSON object"),
        ("/api/resolve", {"init": 0, "steps": ["Nope()"]}, "step 1: Nope() is not enabled in state 0"),
        ("/api/resolve", {"init": 0, "steps": "x"}, "malformed path"),
        ("/api/walk", {"path": [0], "at": 0, "steps": 0}, "a random walk takes 1 to"),
        ("/api/walk", {"path": [0], "at": 0, "steps": 3, "seed": "x"}, "seed must be an integer"),
        ("/api/nothing", {}, "no such API"),
        ("/api/itf?path=0.x", None, "malformed path"),
        ("/nothing", None, "no such page"),
    ],
)
def test_api_bad_input_is_a_json_message(server: ExploreServer, route: str, body: Any, expected: str) -> None:
    status, answer = call(server, route, body)
    assert status in (400, 404)
    assert expected in answer["error"] and "Traceback" not in answer["error"]


def test_api_many_successors_stay_on_demand(wide_server: ExploreServer) -> None:
    status, view = call(wide_server, "/api/view", {"path": [0]})
    assert status == 200
    successors = view["state"]["successors"]
    assert len(successors) == 300 and {s["name"] for s in successors} == {"Send", "Receive", "Drop"}
    assert [s["violates"] for s in successors if s["label"] == "Send(i=99)"] == [["SmallLast"]]
    assert view["state"]["tables"] == [] and [f["name"] for f in view["state"]["fields"]] == ["depth", "last"]
    status, deep = call(wide_server, "/api/view", {"path": [0, 5, 5, 5]})
    assert not deep["state"]["in_bounds"] and deep["state"]["deadlock"]
    assert not deep["steps"][2]["in_bounds"] and deep["steps"][1]["in_bounds"]
    cached = len(wide_server.explorer._successors.items)
    assert cached <= 4  # only the states on the path were expanded, never the state space


# -- the command line ------------------------------------------------------------------------------
def _explore(*args: str) -> None:
    """The typer command, parsed as `kmc explore ARGS` would be, in-process."""
    import typer

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(explore)
    app(args=list(args), prog_name="kmc explore", standalone_mode=False)


def _registered() -> bool:
    from kmc.checker.cli.app import make_app

    return any(
        c.name == "explore" or (c.name is None and c.callback is not None and c.callback.__name__ == "explore")
        for c in make_app().registered_commands
    )


@pytest.fixture
def busy_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["no-such-model"], "unknown model 'no-such-model'"),
        (["replication", "--preset", "nope"], "unknown preset 'nope' for model replication"),
        (["replication", "--set", "replicas=zero"], "bad value for replicas"),
        (["replication", "--preset", "truncate-to-hw", str(OTHER_MODEL_TRACE)], "trace of model group"),
        (["replication", "--preset", "kip-320", str(TRACE)], "another configuration of replication"),
        (["replication", "missing.itf.json"], "trace file not found"),
        (["replication", "--spec", "missing.py"], "spec file not found"),
    ],
)
def test_cli_bad_input(args: list[str], expected: str, kmc: Any) -> None:
    with pytest.raises(UserError, match=re.escape(expected)):
        _explore(*args, "--port", "0")
    if _registered():
        code, _out, err = kmc("explore", *args, "--port", "0")
        assert code == 2 and err.count("\n") == 1 and expected in err


def test_cli_port_in_use(busy_port: int, kmc: Any) -> None:
    with pytest.raises(UserError, match=f"port {busy_port} on 127.0.0.1 is in use"):
        _explore("replication", "--port", str(busy_port))
    if _registered():
        code, _out, err = kmc("explore", "replication", "--port", str(busy_port))
        assert code == 2 and "is in use" in err


def test_cli_serves_until_ctrl_c() -> None:
    script = (
        "import typer; from kmc.checker.cli.explore import explore; "
        "app = typer.Typer(add_completion=False); app.command()(explore); app()"
    )
    args = [sys.executable, "-c", script, "replication", "--preset", "truncate-to-hw", str(TRACE), "--port", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving http://127.0.0.1:" in line, line + proc.stderr.read() if proc.stderr else ""
        url = line.split("serving ")[1].split()[0]
        with urllib.request.urlopen(url + "api/model", timeout=30) as response:
            info = json.loads(response.read())
        assert info["start"]["path"] and "opened" in info["start"]["message"]  # the trace given on the command line
        proc.send_signal(signal.SIGINT)
        out, _err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and out.strip().splitlines()[-1] == "stopped"


# -- the page, in a real browser -------------------------------------------------------------------
@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 950}, accept_downloads=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    SHOTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=str(SHOTS / f"{request.node.name}.png"))
    context.close()
    assert not errors, errors


def settle(page: Any) -> None:
    page.wait_for_function("document.body.dataset.ready === 'yes' && document.body.dataset.busy === 'no'")


def visit(page: Any, url: str) -> None:
    page.goto(url)
    settle(page)


def take(page: Any, label: str) -> None:
    page.locator(f'button.act[data-label="{label}"]').click()
    settle(page)


def click(page: Any, selector: str) -> None:
    page.locator(selector).click()
    settle(page)


def verdict(page: Any, prop: str) -> str:
    return page.locator(f'#props tr[data-prop="{prop}"]').get_attribute("data-verdict")


def click_through(page: Any, server: ExploreServer, labels: list[str] = LABELS) -> None:
    visit(page, server.url)
    assert page.locator("#state-title").inner_text().startswith("State 0")
    for label in labels:
        take(page, label)


def test_page_clicks_through_the_counterexample(page: Any, server: ExploreServer) -> None:
    click_through(page, server)
    assert page.locator("#state-title").inner_text() == f"State 9 of 9: after {LABELS[-1]}"
    assert verdict(page, "StrongIsr") == "violated" and verdict(page, "LeaderInIsr") == "holds"
    assert page.locator("#badges").get_by_text("StrongIsr violated").is_visible()
    assert page.locator("#path li").count() == 10
    assert page.locator('#path li[data-step="9"] .mark.bad').count() == 1
    assert page.locator('#path li[data-step="8"] .mark.bad').count() == 0
    assert page.locator("#tables table").count() >= 2  # the model's own tables
    assert page.locator("#tables td.hl").count() >= 1  # what the last step changed
    page.wait_for_selector("#chart svg")
    assert page.locator("#chart svg .cur-row").count() == 1  # the current step, marked in the chart
    assert not page.locator("#error").is_visible()


def test_page_goes_back_forward_and_jumps(page: Any, server: ExploreServer) -> None:
    click_through(page, server)
    click(page, "#back")
    assert page.locator("#state-title").inner_text().startswith("State 8 of 9")
    assert verdict(page, "StrongIsr") == "holds"
    assert page.locator(f'button.act.on-path[data-label="{LABELS[8]}"]').count() == 1
    assert page.locator(f'button.act.violates[data-label="{LABELS[8]}"]').count() == 1
    click(page, "#forward")
    assert verdict(page, "StrongIsr") == "violated"
    click(page, '#path li[data-step="3"]')
    assert page.locator("#state-title").inner_text() == f"State 3 of 9: after {LABELS[2]}"
    assert page.locator("#path li").count() == 10 and page.locator("#path li.future").count() == 6
    page.keyboard.press("ArrowRight")
    settle(page)
    assert page.locator("#state-title").inner_text().startswith("State 4 of 9")
    assert page.locator("#back").is_enabled() and page.locator("#forward").is_enabled()


def test_page_branches_off_the_path(page: Any, server: ExploreServer) -> None:
    click_through(page, server)
    click(page, "#back")
    other = page.locator(f'button.act:not([data-label="{LABELS[8]}"])').first
    other_label = other.get_attribute("data-label")
    other.click()
    settle(page)
    assert page.locator("#state-title").inner_text() == f"State 9 of 9: after {other_label}"
    assert page.locator('#path li[data-step="9"] .lbl').inner_text() == other_label
    assert page.locator("#path li").count() == 10
    assert page.locator("#forward").is_disabled()


def test_page_reopens_the_copied_link(page: Any, server: ExploreServer) -> None:
    click_through(page, server)
    click(page, "#back")
    click(page, "#back")
    click(page, "#copy-link")
    link = page.locator("#link").input_value()
    assert link.startswith(server.url + "#") and "s=ControllerElectLeader" in link
    fresh = page.context.new_page()
    visit(fresh, link)
    assert fresh.locator("#state-title").inner_text() == f"State 7 of 9: after {LABELS[6]}"
    assert [li.inner_text() for li in fresh.locator("#path li .lbl").all()] == ["Init", *LABELS]
    fresh.close()
    # a link that no longer applies, or is malformed: a visible error, and still a working page
    for broken, message in [
        ("#model=replication&init=0&s=Nope()", "step 1: Nope() is not enabled in state 0"),
        ("#model=replication&at=x", "at=x is not a step number"),
        ("#model=group&s=JoinGroup()", "this link is for model group"),
        ("#junk", 'unknown part "junk"'),
        ("#model=replication&init=0&at=5&s=ControllerElectLeader(leader%3D0)", "at=5, but the path has steps 0 to 1"),
    ]:
        page.goto("about:blank")
        visit(page, server.url + broken)
        assert page.locator("#error").is_visible()
        assert message in page.locator("#error-text").inner_text()
        assert page.locator("#state-title").inner_text().startswith("State 0 of 0")


def test_page_opens_a_trace_and_walks_it(page: Any, server: ExploreServer) -> None:
    visit(page, server.url)
    page.locator("#open-file").set_input_files(str(OTHER_MODEL_TRACE))
    settle(page)
    assert "trace of model group" in page.locator("#error-text").inner_text()
    assert page.locator("#state-title").inner_text().startswith("State 0 of 0")
    page.locator("#open-file").set_input_files(str(TRACE))
    settle(page)
    assert not page.locator("#error").is_visible()
    assert f"opened {TRACE.name}: 10 states" in page.locator("#message").inner_text()
    assert page.locator("#state-title").inner_text().startswith("State 0 of 9")
    for _ in range(9):
        page.keyboard.press("ArrowRight")
        settle(page)
    assert verdict(page, "StrongIsr") == "violated"
    click(page, "#back")  # and branch off it
    take(page, "LeaderWrite(leader=0, id=1)")
    assert page.locator("#state-title").inner_text() == "State 9 of 9: after LeaderWrite(leader=0, id=1)"


def test_page_downloads_itf_that_replays(page: Any, server: ExploreServer, tmp_path: Path) -> None:
    click_through(page, server)
    with page.expect_download() as download:
        page.locator("#download").click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(str(target))
    assert target.name.endswith(".itf.json")
    done = replay(read_trace(target))
    assert len(done.trace) == 10 and done.meta["model"] == "replication" and done.meta["preset"] == "truncate-to-hw"
    assert confirm_violation(done) in ("WeakIsr", "StrongIsr")


def test_page_random_walk_and_shortest_path(page: Any, server: ExploreServer) -> None:
    visit(page, server.url)
    for label in [
        "ControllerElectLeader(leader=0)",
        "ControllerElectLeader(leader=1)",
        "ControllerElectLeader(leader=0)",
    ]:
        take(page, label)
    click(page, "#shortest")  # epoch 2 with leader 0 takes three elections: already shortest
    assert "shortest path: 3 step(s)" in page.locator("#message").inner_text()
    page.locator("#walk-steps").fill("6")
    page.locator("#walk-seed").fill("11")
    click(page, "#walk")
    assert "random walk (seed 11)" in page.locator("#message").inner_text()
    length = int(page.evaluate("document.body.dataset.length"))
    assert 5 <= length <= 10
    page.locator("#walk-steps").fill("0")
    click(page, "#walk")
    assert "give a number of steps from 1 to" in page.locator("#error-text").inner_text()


def test_page_groups_hundreds_of_successors(page: Any, wide_server: ExploreServer) -> None:
    visit(page, wide_server.url)
    groups = page.locator("#actions details.group")
    assert groups.count() == 3
    assert all(not g.evaluate("d => d.open") for g in groups.all())  # 300 buttons: collapsed groups
    assert page.locator("#actions details.group summary").first.inner_text().startswith("Send (100)")
    assert page.locator("#tables table.fields").is_visible()  # no drawing(): the generic per-field table
    page.locator("#filter").fill("Drop(i=42)")
    assert page.locator("button.act:visible").count() == 1
    take(page, "Drop(i=42)")
    assert page.locator("#tables td.hl").count() == 2  # depth and last changed
    page.locator("#filter").fill("Send(i=99)")
    assert page.locator("button.act.violates:visible").count() == 1
    take(page, "Send(i=99)")
    assert verdict(page, "SmallLast") == "violated"
    assert page.locator("#out-of-bounds").is_visible()
    page.locator("#filter").fill("Send(i=1)")
    take(page, "Send(i=1)")
    assert page.locator("#deadlock").is_visible()
    assert "no successor" in page.locator("#actions").inner_text()


@pytest.mark.skipif(not os.environ.get("KMC_DOCS_SCREENSHOTS"), reason="set KMC_DOCS_SCREENSHOTS=1 to retake them")
def test_docs_screenshots(page: Any, server: ExploreServer, wide_server: ExploreServer) -> None:
    page.set_viewport_size({"width": 1280, "height": 820})
    click_through(page, server)
    page.screenshot(path=str(DOCS / "explorer-violation.png"))
    page.locator("#chart-box").scroll_into_view_if_needed()
    page.locator("#chart").screenshot(path=str(DOCS / "explorer-chart.png"))
    page.goto("about:blank")
    visit(page, server.url + "#model=replication&init=0&s=Nope()")
    page.screenshot(path=str(DOCS / "explorer-bad-link.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 420})
    visit(page, wide_server.url)
    page.screenshot(path=str(DOCS / "explorer-groups.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 520})


def test_kmc_explore_stops_on_sigterm_as_on_ctrl_c() -> None:
    """The `kmc` command (its SIGTERM handler installed), as a service manager stops it."""
    args = [sys.executable, "-m", "kmc.checker.cli", "explore", "replication", "--port", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving http://127.0.0.1:" in line
        with urllib.request.urlopen(line.split("serving ")[1].split()[0] + "api/model", timeout=30):
            pass  # the server is serving: the signal reaches it there
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, (out, err)
    assert out.strip().splitlines()[-1] == "stopped" and err.strip() == "kmc: interrupted (SIGTERM)"


def test_kmc_explore_of_a_trace_away_from_its_model_file_says_to_give_the_model(kmc: Any, tmp_path: Path) -> None:
    made, away = tmp_path / "made", tmp_path / "away"
    made.mkdir()
    away.mkdir()
    (made / "toy_models.py").write_text((Path(__file__).parent / "toy_models.py").read_text())
    code, _out, _err = kmc("check", f"{made / 'toy_models.py'}:CounterGrid", "--set", "limit=3", "--out", made)
    assert code == 1
    [trace] = made.glob("*.itf.json")
    copied = away / trace.name
    copied.write_text(trace.read_text())
    code, _out, err = kmc("explore", copied, "--port", "0")
    assert (code, err) == (
        2,
        f"kmc: error: model file not found: {away / 'toy_models.py'}; give the model first: "
        f"kmc explore path/to/file.py:Class {copied}\n",
    )


def test_kmc_explore_opens_a_trace_alone_on_the_model_and_config_it_names() -> None:
    """`kmc explore TRACE`: the model, preset and config come from the trace, which is the path opened."""
    trace = ROOT / "counterexamples" / "kraft-replication" / "v3.5-AcknowledgedWriteNeverLost.itf.json"
    args = [sys.executable, "-m", "kmc.checker.cli", "explore", str(trace), "--port", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kmc explore kraft-replication --preset v3.5: serving http://127.0.0.1:"), line
        with urllib.request.urlopen(line.split("serving ")[1].split()[0] + "api/model", timeout=30) as answer:
            start = json.load(answer)["start"]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(start["path"]) == 12 and start["message"].startswith(f"opened {trace}: 12 states")
