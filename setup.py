"""The C extensions (everything else is in pyproject.toml): state fingerprints, the canonical
encoding, the in-memory visited set of fingerprints, the compact form of a level's states, the
coverage observer's counting, and the successor functions of the `replication`,
`kraft-replication`, `kraft-quorum` and `group` models.

Each is optional: where no C compiler is found the install goes on, and the Python each one
twins runs instead with the same results: the pure-Python fingerprints give the same numbers,
the encoder the same bytes, the visited set the same answers, the level codec (pickle) the same
states, the coverage observer the same counts, a model's Python the same successors.

A model's C twin is every ``.c`` file of its package's ``_c/`` folder, built as
``kmc.models.<model>._successors``; the headers there and the shared ``models/common/_c`` ones are
its dependencies.
"""

from pathlib import Path

from setuptools import Extension, setup

COMMON = "models/common/_c"
TWINS = ("replication", "kraft_replication", "kraft_quorum", "group")


def twin(model: str) -> Extension:
    """The C twin of a model's successor function: every C file of models/<model>/_c."""
    folder = Path("models") / model / "_c"
    return Extension(
        f"kmc.models.{model}._successors",
        sorted(str(p) for p in folder.glob("*.c")),
        include_dirs=[COMMON],
        depends=sorted(str(p) for p in [*folder.glob("*.h"), *Path(COMMON).glob("*.h")]),
        optional=True,
    )


EXTENSIONS = [
    Extension("kmc.checker.storage._canonical", ["checker/storage/_c/canonical.c"], optional=True),
    Extension("kmc.checker.storage._fingerprint", ["checker/storage/_c/fingerprint.c"], optional=True),
    Extension("kmc.checker.storage._fpset", ["checker/storage/_c/fpset.c"], optional=True),
    Extension("kmc.checker.storage._statecodec", ["checker/storage/_c/statecodec.c"], optional=True),
    Extension("kmc.checker.search._counts", ["checker/search/_c/counts.c"], optional=True),
    *(twin(model) for model in TWINS),
]

if __name__ == "__main__":  # as pip's build runs it; a test imports EXTENSIONS
    setup(ext_modules=EXTENSIONS)
