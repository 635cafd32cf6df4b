"""Packages for setuptools (the rest of the metadata is in ``pyproject.toml``).

The ready spaces and studies keep their folders at the repository root but install inside
the nasflow namespace: ``search_spaces/`` as ``nasflow.search_spaces``, ``studies/`` as
``nasflow.studies`` (nothing is installed under a generic top-level name).
"""

from __future__ import annotations

from setuptools import find_packages, setup

#: Root folders installed as subpackages of nasflow.
MAPPED = {"search_spaces": "nasflow.search_spaces", "studies": "nasflow.studies"}

packages = find_packages(include=["nasflow", "nasflow.*"])
for folder, name in MAPPED.items():
    packages += [name + p[len(folder) :] for p in find_packages(include=[folder, folder + ".*"])]

setup(
    packages=packages,
    package_dir={"": ".", **{name: folder for folder, name in MAPPED.items()}},
)
