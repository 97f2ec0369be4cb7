"""Network partitions between the nodes of a cluster on loopback, made with iptables.

Every node connects from 127.0.0.1, so a packet is told from another by the Unix user of the socket
that sends it: each node runs as a user of its own, and a rule drops what one node's user sends to
another node. The rules live in a chain of the run's own (``KMC-<run>``), jumped to from OUTPUT,
and are removed with it on every way out (cluster.py, reaper.py).

* A symmetric partition between sets A and B drops what a node of A sends to a port of B and the
  reverse: every connection between them is cut, whichever side opened it.
* A one-way partition, A cannot reach B, must also drop A's replies on the connections B opened to
  A -- owner matching alone cannot tell those from replies to anyone else. Connections are marked
  with the connmark of the user who opened them (``CONNMARK`` in the run's chain), and what A's user
  sends on a connection marked as opened by a node of B is dropped too. B still reaches A: its
  requests arrive, but their answers do not, as with a real one-way link.
"""

from __future__ import annotations

import pwd
import shutil
import subprocess
from collections.abc import Iterable, Sequence

from kmc.checker.errors import UserError

TABLE_TIMEOUT_S = 20


def available() -> str | None:
    """None where partitions can be made here, else why not (one line)."""
    import os

    if os.geteuid() != 0:
        return "network partitions need root (iptables, and a Unix user per node)"
    if shutil.which("iptables") is None:
        return "network partitions need iptables (sudo apt-get install -y iptables)"
    done = subprocess.run(["iptables", "-w", "-n", "-L", "OUTPUT"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"iptables cannot be used here: {done.stderr.strip()[:200]}"
    return None


def iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["iptables", "-w", str(TABLE_TIMEOUT_S), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=TABLE_TIMEOUT_S + 10,
    )
    if check and done.returncode != 0:
        raise UserError(f"iptables {' '.join(args)} failed: {done.stderr.strip()[:300]}")
    return done


class Firewall:
    """The run's chains: ``<chain>-MARK`` marks every connection with the uid of the node user that
    opens it (from the start, so connections made before a partition are known too); ``<chain>``
    holds the partitions now in force."""

    def __init__(self, chain: str) -> None:
        self.chain = chain
        self.marks = f"{chain}-MARK"

    def create(self, users: Sequence[str]) -> None:
        self.remove()
        for chain in (self.marks, self.chain):
            iptables("-N", chain)
        iptables("-I", "OUTPUT", "1", "-j", self.chain)
        iptables("-I", "OUTPUT", "1", "-j", self.marks)
        for user in users:
            iptables(
                "-A",
                self.marks,
                "-o",
                "lo",
                "-p",
                "tcp",
                "-m",
                "owner",
                "--uid-owner",
                user,
                "-m",
                "conntrack",
                "--ctstate",
                "NEW",
                "-j",
                "CONNMARK",
                "--set-mark",
                str(pwd.getpwnam(user).pw_uid),
            )

    def exists(self) -> bool:
        return iptables("-n", "-L", self.chain, check=False).returncode == 0

    def remove(self) -> None:
        """The chains and the jumps to them, if they are there (idempotent: every way out calls it)."""
        for chain in (self.chain, self.marks):
            while iptables("-D", "OUTPUT", "-j", chain, check=False).returncode == 0:
                pass
            iptables("-F", chain, check=False)
            iptables("-X", chain, check=False)

    def heal(self) -> None:
        iptables("-F", self.chain)

    def partition(
        self, a: Sequence[tuple[str, Sequence[int]]], b: Sequence[tuple[str, Sequence[int]]], one_way: bool = False
    ) -> None:
        """Cut A from B (each a list of (user, listening ports)); with ``one_way``, only A -> B."""
        for user_a, _ports_a in a:
            for user_b, ports_b in b:
                self.drop(user_a, ports_b)
                if one_way:  # and A's replies on the connections B opened
                    self._drop_sent_by(user_a, "-m", "connmark", "--mark", str(pwd.getpwnam(user_b).pw_uid))
        if not one_way:
            for user_b, _ports_b in b:
                for _user_a, ports_a in a:
                    self.drop(user_b, ports_a)

    def drop(self, user: str, ports: Iterable[int]) -> None:
        """Drop what ``user`` sends to these ports."""
        self._drop_sent_by(user, "-m", "multiport", "--dports", ",".join(str(p) for p in ports))

    def _drop_sent_by(self, user: str, *match: str) -> None:
        """A rule of the run's chain: drop the loopback TCP that ``user`` sends and ``match`` selects."""
        iptables("-A", self.chain, "-o", "lo", "-p", "tcp", "-m", "owner", "--uid-owner", user, *match, "-j", "DROP")
