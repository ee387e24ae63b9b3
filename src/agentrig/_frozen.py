"""``fast_init``: cheaper construction for the frozen dataclasses the loop builds per step.

A frozen dataclass's generated ``__init__`` stores every field with ``object.__setattr__``
(a global lookup, an attribute lookup and a generic call per field). Writing through the slot
descriptors directly costs about half as much; for a class without slots, one write of the
instance's ``__dict__`` (built as a dict display) costs less still when it has many fields
(``StepRuntime``, nine). Everything else stays the dataclass's own: fields, equality, hashing,
repr, ``dataclasses.replace``, and the ``FrozenInstanceError`` that ``__setattr__`` and
``__delattr__`` raise.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


class _Factory:
    """The default of a field with a default factory (reads ``<factory>`` in signatures)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def fast_init(cls: C) -> C:
    """Replace ``cls.__init__`` (a frozen dataclass) by one storing through the slots, or, for
    a class without slots, setting the instance's ``__dict__`` in one write.

    The signature is the dataclass's own: the same parameters, order, defaults, default factories
    and keyword-only fields. Classes with ``__post_init__``, ``InitVar`` or ``init=False`` fields
    are refused (their construction does more than store fields).
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"fast_init needs a frozen dataclass, got {cls.__name__}")
    fields = dataclasses.fields(cls)
    order = [f.name for f in fields if not f.kw_only] + [f.name for f in fields if f.kw_only]
    generated = list(inspect.signature(cls).parameters)
    if hasattr(cls, "__post_init__") or generated != order:
        raise TypeError(
            f"fast_init cannot build {cls.__name__}: it has __post_init__, an InitVar "
            "or an init=False field"
        )
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    stored: list[tuple[str, str]] = []  # each field's name and the expression of its value
    for index, field in enumerate(fields):
        parameter, value = field.name, field.name
        if field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{index}"] = field.default_factory
            parameter = f"{field.name}=_FACTORY"
            value = f"_factory{index}() if {field.name} is _FACTORY else {field.name}"
        elif field.default is not dataclasses.MISSING:
            namespace[f"_default{index}"] = field.default
            parameter = f"{field.name}=_default{index}"
        (keyword if field.kw_only else positional).append(parameter)
        stored.append((field.name, value))
    if "__slots__" in cls.__dict__:
        body = ""
        for index, (name, value) in enumerate(stored):
            namespace[f"_set{index}"] = _slot_setter(cls, name)
            body += f"    _set{index}(self, {value})\n"
    else:
        namespace["_set_dict"] = _dict_setter(cls)
        items = ", ".join(f"{name!r}: {value}" for name, value in stored)
        body = f"    _set_dict(self, {{{items}}})\n"
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + (body or "    pass\n")
    exec(compile(source, f"<{cls.__name__}.__init__>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(getattr(cls.__dict__["__init__"], "__annotations__", {}))
    setattr(cls, "__init__", init)  # noqa: B010  # mypy refuses assigning __init__ on a type
    return cls


def _slot_setter(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        descriptor = klass.__dict__.get(name)
        if isinstance(descriptor, types.MemberDescriptorType):
            return descriptor.__set__
    raise TypeError(f"fast_init: field {name!r} of {cls.__name__} is not a slot")


def _dict_setter(cls: type) -> Any:
    for klass in cls.__mro__:
        descriptor = klass.__dict__.get("__dict__")
        if isinstance(descriptor, types.GetSetDescriptorType):
            return descriptor.__set__
    raise TypeError(f"fast_init: {cls.__name__} has neither slots nor a __dict__")
