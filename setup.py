"""The C extensions (everything else is in pyproject.toml): the encoder behind fingerprints, and
the `replication` model's successor function.

Both are optional: where no C compiler is found the install goes on, fingerprints are computed by
the pure-Python encoder, which gives the same bytes, and the model by its Python, which gives the
same successors.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kmc.checker._canonical", ["checker/_canonical.c"], optional=True),
        Extension("kmc.models._replication", ["models/_replication.c"], optional=True),
    ]
)
