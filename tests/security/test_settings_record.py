"""`Settings` records behave as frozen dataclasses: fields in order with defaults and
factories, validation in `__post_init__`, equality, hashing, a repr, no assignment."""

from __future__ import annotations

from typing import ClassVar

import pytest

from groupcoord.security.settings import Settings, field


class Point(Settings):
    KIND: ClassVar[str] = "point"
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must be >= 0")


class Point3(Point):
    z: int = 0


def test_fields_defaults_and_factories() -> None:
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 0, [])
    assert Point(1, 2, ["a"]) == Point(x=1, y=2, tags=["a"])
    assert Point(1).tags is not Point(1).tags  # a fresh default per record
    assert Point.KIND == "point" and Point._fields == ("x", "y", "tags")
    assert Point3(1, z=3)._fields == ("x", "y", "tags", "z") and Point3(1, z=3).z == 3
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"


def test_equality_and_hashing_by_value_and_class() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(1, 3)
    assert Point(1) != Point3(1)
    frozen = Point(1, 2, ())  # type: ignore[arg-type]
    assert hash(frozen) == hash(Point(1, 2, ()))  # type: ignore[arg-type]
    assert len({frozen, Point(1, 2, ())}) == 1  # type: ignore[arg-type]


def test_immutable() -> None:
    p = Point(1)
    with pytest.raises(AttributeError, match="immutable"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del p.x  # type: ignore[misc]


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ValueError, match="x must be"):
        Point(-1)
    with pytest.raises(TypeError, match="missing field 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no field 'w'"):
        Point(1, w=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'x' twice"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, [], 4)  # type: ignore[call-arg]


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="follows one with a default"):
        class Bad(Settings):
            a: int = 0
            b: int


def test_replace_makes_a_validated_copy() -> None:
    p = Point(1, 2, ["a"])
    moved = p.replace(y=5)
    assert moved == Point(1, 5, ["a"]) and p == Point(1, 2, ["a"])
    assert Point3(1, z=3).replace(x=2) == Point3(2, z=3)
    with pytest.raises(ValueError, match="x must be"):
        p.replace(x=-1)
    with pytest.raises(TypeError, match="no field 'w'"):
        p.replace(w=1)
