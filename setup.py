"""The C extensions (everything else is in pyproject.toml): the encoder behind fingerprints, the
coverage observer's counting, and the successor functions of the `replication`,
`kraft-replication`, `kraft-quorum` and `group` models.

Each is optional: where no C compiler is found the install goes on, and the Python each one
twins runs instead with the same results: the pure-Python encoder gives the same bytes, the
coverage observer the same counts, a model's Python the same successors.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kmc.checker._canonical", ["checker/_canonical.c"], optional=True),
        Extension("kmc.checker._counts", ["checker/_counts.c"], optional=True),
        Extension("kmc.models._replication", ["models/_replication.c"], depends=["models/_tuples.h"], optional=True),
        Extension(
            "kmc.models._kraft_replication",
            [
                "models/_kraft_replication.c",
                "models/_kraft_replication_read.c",
                "models/_kraft_replication_state.c",
                "models/_kraft_replication_leader.c",
                "models/_kraft_replication_follower.c",
                "models/_kraft_replication_controller.c",
            ],
            depends=["models/_kraft_replication.h", "models/_tuples.h"],
            optional=True,
        ),
        Extension(
            "kmc.models._kraft_quorum",
            ["models/_kraft_quorum.c", "models/_kraft_quorum_state.c", "models/_kraft_quorum_voters.c"],
            depends=["models/_kraft_quorum.h", "models/_tuples.h"],
            optional=True,
        ),
        Extension(
            "kmc.models._group",
            [
                "models/_group.c",
                "models/_group_read.c",
                "models/_group_build.c",
                "models/_group_state.c",
                "models/_group_coordinator.c",
                "models/_group_client.c",
            ],
            depends=["models/_group.h", "models/_tuples.h"],
            optional=True,
        ),
    ]
)
