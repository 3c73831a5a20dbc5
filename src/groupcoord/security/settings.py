"""`Settings`: the base of the immutable records the broker builds before it binds its
listeners (`BrokerConfig`, `SecurityConfig`, `Listener`, the API table's `ApiSpec`).

Everything on that path is part of the time to the first ApiVersions answer. A frozen
`@dataclass` compiles its `__init__`, `__eq__`, `__hash__`, `__repr__` and `__setattr__`
from generated source when the class is created: about 0.2-0.5 ms per class on a 2-core
EPYC, plus the `dataclasses` import, against a 40 ms floor. These records take their fields
from the class annotations once (no code is generated) and behave as a frozen dataclass to
their users and to the type checker (`dataclass_transform`): keyword or positional fields
in declaration order, defaults, `field(default_factory=...)`, `__post_init__` validation,
equality, hashing, a repr, `replace(**changes)` for `dataclasses.replace`, and no
assignment after construction. Construction is slower than a dataclass's (a loop over the
fields): for records built a handful of times. It lives here, the lowest layer the config
modules share, so `security.config` can use it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

T = TypeVar("T")

_NO_DEFAULT = object()


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made fresh for every record (a mutable default)."""
    return _Factory(default_factory)  # type: ignore[return-value]


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Settings:
    """Subclass with annotated fields (and defaults) as a frozen dataclass would be."""

    __slots__ = ()
    # Field names in declaration order (base classes first), and their defaults.
    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, object]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = list(cls._fields)
        defaults = dict(cls._defaults)
        for name, annotation in inspect.get_annotations(cls).items():
            if str(annotation).removeprefix("typing.").startswith("ClassVar"):
                continue
            if name not in fields:
                fields.append(name)
            default = cls.__dict__.get(name, _NO_DEFAULT)
            if default is not _NO_DEFAULT:
                defaults[name] = default
                delattr(cls, name)  # the instance's value, never the class's, is read
            elif defaults and name not in defaults:
                raise TypeError(f"{cls.__name__}.{name}: a field without a default "
                                f"follows one with a default")
        cls._fields, cls._defaults = tuple(fields), defaults

    def __init__(self, *args: object, **kwargs: object) -> None:
        names = self._fields
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, "
                            f"got {len(args)} positional")
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__} got {name!r} twice")
            values[name] = value
        setter = object.__setattr__
        for name in names:
            if name in values:
                setter(self, name, values[name])
                continue
            default = self._defaults.get(name, _NO_DEFAULT)
            if default is _NO_DEFAULT:
                raise TypeError(f"{type(self).__name__} is missing field {name!r}")
            setter(self, name, default.make() if isinstance(default, _Factory) else default)
        self.__post_init__()

    def __post_init__(self) -> None:
        """Validation of the constructed record (nothing by default)."""

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied (`dataclasses.replace`), validated again."""
        values = {name: getattr(self, name) for name in self._fields}
        for name in changes:
            if name not in values:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
        return type(self)(**{**values, **changes})

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")
