"""The C extensions (everything else is in pyproject.toml): the encoder behind fingerprints, the
coverage observer's counting, and the `replication` model's successor function.

Each is optional: where no C compiler is found the install goes on, and the Python each one
twins runs instead with the same results: the pure-Python encoder gives the same bytes, the
coverage observer the same counts, a model's Python the same successors.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kmc.checker._canonical", ["checker/_canonical.c"], optional=True),
        Extension("kmc.checker._counts", ["checker/_counts.c"], optional=True),
        Extension("kmc.models._replication", ["models/_replication.c"], optional=True),
    ]
)
