"""A process that owns a one-node cluster (its node running as a user of its own, behind a firewall
chain of its own), for the tests of what is left when such a process ends:

    python tests/cluster_owner.py RUN_DIR exit|raise|wait

It prints ``ready <run id>`` once the node is up, then leaves the ``with`` block normally (exit),
with an exception (raise), or waits to be interrupted, terminated or killed (wait)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kmc.cluster.cluster import ClusterSpec, started


def main(run_dir: Path, mode: str) -> None:
    with started(run_dir, ClusterSpec(nodes=1, node_users=True, settings={"default.replication.factor": "1"})) as c:
        print("ready", c.info["run_id"], flush=True)
        if mode == "raise":
            raise RuntimeError("the test using the cluster failed")
        if mode == "wait":
            time.sleep(600)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
