"""The C encoder behind fingerprints (everything else is in pyproject.toml).

It is optional: where no C compiler is found the install goes on and fingerprints are computed by
the pure-Python encoder, which gives the same bytes.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kmc.checker._canonical", ["checker/_canonical.c"], optional=True)])
