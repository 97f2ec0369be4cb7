"""The reaper of an owned cluster: started beside it, it waits for the pipe from the process that
owns the cluster to close -- which happens however that process ends, ``kill -9`` included -- and
then kills what is left of the nodes and removes the firewall rules and the users.

    python -m kmc.cluster.reaper RUN_DIR     (stdin: the pipe; cluster.py starts it)
"""

from __future__ import annotations

import sys
from pathlib import Path

from kmc.checker.errors import UserError
from kmc.cluster.cluster import cleanup, read_info


def main(argv: list[str]) -> int:
    run_dir = Path(argv[0])
    sys.stdin.buffer.read()  # returns at EOF: the owner closed the pipe, or died
    try:
        cleanup(read_info(run_dir))
    except UserError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
