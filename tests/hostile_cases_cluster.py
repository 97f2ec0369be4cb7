"""The hostile-input battery's cases for `kmc drive` and the real-cluster commands: every one is
refused before a node starts (test_hostile_inputs.py runs them with the rest)."""

from __future__ import annotations

from hostile_cases import TESTS, TRACE_FAULTS, Case, case, suite

COUNTEREXAMPLES = TESTS.parent / "counterexamples"
KIP848_TRACE = str(COUNTEREXAMPLES / "group-kip848" / "kip-848-NoDoubleClientAssignment.itf.json")
DRIVE_SUITE = f'[[drive]]\nname = "d"\ntrace = "{KIP848_TRACE}"\n'


def drive_cases() -> list[Case]:
    out = [
        case(f"drive-{fault}", "drive", "{tmp}/t.itf.json", "--no-progress", files={"t.itf.json": make})
        for fault, make in TRACE_FAULTS.items()
    ]
    undrivable = {
        "replication": ("replication/kip-101-StrongIsr.itf.json", "has no driver"),
        "rebalance-timeout": ("group/kafka-8653-RebalanceCompletes.itf.json", "cannot be driven"),
        "elect-leader": ("producer/leader-change-NoDuplicates.itf.json", "ElectLeader cannot be driven"),
        "verification-split": (
            "transactions/pre-kafka-14884-OpenTransactionKnownToCoordinator.itf.json",
            "answer cannot be held back",
        ),
        "classic-delivery": ("consumer-delivery/eos-v2-ProcessedAtMostOnce.itf.json", "classic protocol's rebalance"),
        "crashed-consumer": (
            "consumer-delivery/commit-before-processing-kip-848-AtLeastOnce.itf.json",
            "ConsumerCrash",
        ),
    }
    for name, (trace, says) in undrivable.items():
        out.append(case(f"drive-{name}", "drive", str(COUNTEREXAMPLES / trace), "--no-progress", says=says))
    out += [
        case("drive-toy-model", "drive", "{trace}", "--no-progress", says="has no driver"),
        case("drive-missing", "drive", "{tmp}/none.itf.json", "--no-progress", says="no trace at"),
        case("drive-dir", "drive", "{tmp}/d", "--no-progress", files={"d/x": ""}),
        case("drive-release-not-one", "drive", KIP848_TRACE, "--kafka-version", "banana", says="not a Kafka release"),
        case("drive-release-zookeeper", "drive", KIP848_TRACE, "--kafka-version", "3.0.0", says="KRaft mode"),
        case("drive-release-no-kip848", "drive", KIP848_TRACE, "--kafka-version", "3.6.2", says="needs Kafka 3.7.0"),
        case(
            "drive-release-no-tv2",
            "drive",
            str(COUNTEREXAMPLES / "transactions" / "pre-kafka-18464-FencedOnlyByANewerProducer.itf.json"),
            "--kafka-version",
            "3.9.1",
            says="transaction version 2",
        ),
        case("drive-release-empty", "drive", KIP848_TRACE, "--kafka-version", ""),
        case("drive-cluster-not-a-run", "drive", KIP848_TRACE, "--cluster", "{tmp}", says="not a run directory"),
        case("drive-cluster-missing", "drive", KIP848_TRACE, "--cluster", "{tmp}/none"),
        case("drive-out-is-dir", "drive", KIP848_TRACE, "--out", "{tmp}/d.json", files={"d.json/x": ""}),
        case("drive-out-under-file", "drive", KIP848_TRACE, "--out", "{tmp}/f/r.json", files={"f": "x"}),
        case("drive-out-not-json", "drive", KIP848_TRACE, "--out", "{tmp}/r.txt", says=".json"),
        case("drive-no-trace", "drive"),
        case("drive-unknown-flag", "drive", KIP848_TRACE, "--nope"),
        case("render-drive-missing", "render", "{trace}", "-o", "{tmp}/o.html", "--drive", "{tmp}/none.json"),
        case(
            "render-drive-not-json",
            "render",
            "{trace}",
            "-o",
            "{tmp}/o.html",
            "--drive",
            "{tmp}/r.json",
            files={"r.json": "{ nope"},
            says="cannot read the drive result",
        ),
        case(
            "render-drive-no-results",
            "render",
            "{trace}",
            "-o",
            "{tmp}/o.html",
            "--drive",
            "{tmp}/r.json",
            files={"r.json": '{"results": 3}'},
            says="is not a `kmc drive` result",
        ),
        case("cluster-status-not-a-run", "cluster", "status", "--run-dir", "{tmp}", says="not a run directory"),
        case("cluster-start-zero-nodes", "cluster", "start", "--run-dir", "{tmp}/c", "--nodes", "0"),
        case("cluster-start-ten-nodes", "cluster", "start", "--run-dir", "{tmp}/c", "--nodes", "10"),
        case("cluster-start-bad-release", "cluster", "start", "--run-dir", "{tmp}/c", "--release", "x.y"),
        case("cluster-start-bad-set", "cluster", "start", "--run-dir", "{tmp}/c", "--set", "novalue"),
        case("campaign-too-short", "campaign", "--duration", "2", says="5 to 3600 seconds"),
        case("campaign-unknown-fault", "campaign", "--faults", "meteor", "--duration", "10"),
        case("campaign-bad-acks", "campaign", "--acks", "7", "--duration", "10"),
        case("campaign-config-missing", "campaign", "--config", "{tmp}/none.toml", says="campaign file not found"),
        case(
            "campaign-config-not-toml",
            "campaign",
            "--config",
            "{tmp}/c.toml",
            files={"c.toml": "= nope"},
            says="malformed campaign file",
        ),
        case("verify-missing", "verify", "{tmp}/none", says="is not a directory"),
        case("verify-not-a-campaign", "verify", "{tmp}/d", files={"d/x": ""}),
        suite(DRIVE_SUITE + 'expect = "holds"\n', "drive-bad-expect", says="'expect' must be one of"),
        suite('[[drive]]\nname = "d"\nexpect = "fixed"\n', "drive-no-trace", says="needs a trace"),
        suite(DRIVE_SUITE.replace(KIP848_TRACE, "none.itf.json") + 'expect = "fixed"\n', "drive-trace-missing"),
        suite(DRIVE_SUITE + 'expect = "fixed"\nrelease = "4.0.2"\n', "drive-unknown-key", says="unknown key"),
        suite('[[drive]]\ntrace = "t"\nexpect = "fixed"\n', "drive-no-name", says="needs a name"),
    ]
    return out


CLUSTER_CASES = drive_cases()
