"""The Unix users a cluster's nodes run as (root only): one per node, made for the run and removed
with it, so that a node's packets can be told by their owner (network.py)."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import time

from kmc.checker.errors import UserError

PREFIX = "kmc"


def user_name(run_id: str, node_id: int) -> str:
    """A short name (Linux allows 32 characters) that says whose it is: kmc<run>n<node>."""
    return f"{PREFIX}{run_id}n{node_id}"


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


LOCK_TRIES = 20
LOCK_WAIT_S = 0.25


def shadow_tool(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """useradd, userdel or groupdel, tried again while another one holds /etc/passwd's lock (two
    clusters starting or stopping at once): at most LOCK_TRIES times, LOCK_WAIT_S apart."""
    for _ in range(LOCK_TRIES):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode == 0 or "lock" not in done.stderr.lower():
            return done
        time.sleep(LOCK_WAIT_S)
    return done


def create(name: str) -> None:
    if exists(name):
        return
    done = shadow_tool(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name]
    )
    if done.returncode != 0:
        raise UserError(f"cannot create the node user {name}: {done.stderr.strip()[:200]}")


def remove(name: str) -> None:
    """The user and its group, if they are there (idempotent)."""
    if exists(name):
        shadow_tool(["userdel", name])
    if group_exists(name):
        shadow_tool(["groupdel", name])


def group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def chown_tree(path: os.PathLike[str], name: str) -> None:
    """Give a node's folder to its user (it writes its data and logs there)."""
    entry = pwd.getpwnam(name)
    for root, dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for item in [*dirs, *files]:
            os.chown(os.path.join(root, item), entry.pw_uid, entry.pw_gid, follow_symlinks=False)
