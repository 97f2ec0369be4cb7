"""Choosing a C twin: it is used where it was built, unless KMC_PURE_PYTHON is set or a subclass
changes a method it stands in for."""

from __future__ import annotations

import pytest
from kmc.checker.extension import c_extension, keeps_methods
from kmc.models.group.model import GroupModel
from kmc.models.kraft_quorum.model import KraftQuorumModel
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.replication.model import ReplicationModel

TWINS = [
    (ReplicationModel, "kmc.models.replication._successors"),
    (KraftReplicationModel, "kmc.models.kraft_replication._successors"),
    (KraftQuorumModel, "kmc.models.kraft_quorum._successors"),
    (GroupModel, "kmc.models.group._successors"),
]
each_twin = pytest.mark.parametrize(("definition", "extension"), TWINS, ids=[t[1].rsplit("._", 1)[1] for t in TWINS])


class Base:
    def step(self) -> int:
        return 1

    @classmethod
    def build(cls) -> Base:
        return cls()


class Definition(Base):
    def other(self) -> int:
        return 2


def test_c_extension_is_none_for_a_module_not_built_and_under_kmc_pure_python(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert c_extension("kmc.checker._no_such_extension") is None
    monkeypatch.setenv("KMC_PURE_PYTHON", "1")
    assert c_extension("kmc.checker.storage._canonical") is None


def test_keeps_methods_sees_a_change_to_any_method_of_the_class_or_its_bases() -> None:
    class Renamed(Definition):
        name = "renamed"

        def added(self) -> int:
            return 3

    class ChangesOwn(Definition):
        def other(self) -> int:
            return 0

    class ChangesInherited(Definition):
        def step(self) -> int:
            return 0

    class ChangesClassMethod(Definition):
        @classmethod
        def build(cls) -> Base:
            return Base()

    assert keeps_methods(Definition(), Definition) and keeps_methods(Renamed(), Definition)
    for changed in (ChangesOwn, ChangesInherited, ChangesClassMethod):
        assert not keeps_methods(changed(), Definition), changed


@each_twin
def test_kmc_pure_python_turns_each_twin_off(definition: type, extension: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KMC_PURE_PYTHON", "1")
    assert c_extension(extension) is None
    assert definition.build()._twin_ctx is None  # type: ignore[attr-defined]


@each_twin
def test_a_model_subclass_uses_the_c_unless_it_changes_a_method(definition: type, extension: str) -> None:
    if c_extension(extension) is None:
        pytest.skip("the C extension was not built")

    class Unchanged(definition):  # type: ignore[misc, valid-type]
        pass

    class Changed(definition):  # type: ignore[misc, valid-type]
        def init_states(self):  # type: ignore[no-untyped-def]
            return super().init_states()

    assert Unchanged()._twin is not None and Changed()._twin is None
