"""From a tool function's signature to its arguments model, checked when the tool is made.

Whatever the model could not call through (generator functions, ``*args``, positional-only or
``_``-prefixed parameters, a type pydantic cannot describe, ...) raises ``ConfigurationError``
naming the tool and the parameter, rather than failing on every call.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    PydanticUndefinedAnnotation,
    PydanticUserError,
    TypeAdapter,
    create_model,
)

from agentrig.errors import ConfigurationError


def tool_name(function: Callable[..., Any]) -> str:
    """The function's name, which must be usable as a tool name."""
    name = getattr(function, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(
            f"cannot name a tool made of {function!r}: it has no function name "
            "(a functools.partial or a lambda, say); pass one: "
            "FunctionTool(function, name=...) or @tool(name=...)"
        )
    return name


def tool_description(function: Callable[..., Any]) -> str:
    """The function's docstring, cleaned."""
    # A partial's own __doc__ is the partial class's: describe the wrapped function instead.
    target = function.func if isinstance(function, functools.partial) else function
    return inspect.cleandoc(getattr(target, "__doc__", None) or "")


_SHADOWS_WARNING = r'Field name ".*" in ".*" shadows an attribute in parent "BaseModel"'


def tool_label(function: Callable[..., Any], name: str) -> str:
    """How errors name the tool: its name, and the function's when that differs."""
    qualname = getattr(function, "__qualname__", None)
    return f"tool '{name}'" if qualname in (None, name) else f"tool '{name}' ({qualname})"


def is_async_callable(function: Callable[..., Any]) -> bool:
    """True for an ``async def`` function, or an object whose ``__call__`` is one."""
    return any(inspect.iscoroutinefunction(f) for f in (function, _call_method(function)))


def check_callable_kind(function: Callable[..., Any], label: str) -> None:
    """Refuse functions whose call does not return the tool's value (or a coroutine of it):
    generator and async generator functions."""
    call = _call_method(function)
    if any(inspect.isasyncgenfunction(f) for f in (function, call)):
        raise ConfigurationError(
            f"{label} is an async generator function, but a tool returns its value: make it an "
            "'async def' that returns a list instead of yielding"
        )
    if inspect.isgeneratorfunction(function) or inspect.isgeneratorfunction(call):
        raise ConfigurationError(
            f"{label} is a generator function, but a tool returns its value: return a list "
            "instead of yielding"
        )


def read_signature(function: Callable[..., Any], label: str) -> inspect.Signature:
    """The signature with the parameters' string annotations evaluated."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(
            f"{label}: its signature cannot be read ({error}); wrap it in a 'def' with named, "
            "typed parameters"
        ) from None
    try:
        return inspect.signature(function, eval_str=True)
    except Exception:  # a string annotation that does not evaluate: find which one
        return _evaluated_parameters(signature, _globals_of(function), label)


def _evaluated_parameters(
    signature: inspect.Signature, namespace: dict[str, Any], label: str
) -> inspect.Signature:
    """The signature with each parameter's string annotation evaluated (the return annotation,
    which tools do not use, is dropped); a parameter whose annotation fails is named."""
    params = []
    for param in signature.parameters.values():
        if isinstance(param.annotation, str):
            try:
                param = param.replace(annotation=eval(param.annotation, namespace))
            except Exception as error:
                raise ConfigurationError(
                    f"{label}: the annotation {param.annotation!r} of parameter '{param.name}' "
                    f"cannot be resolved ({type(error).__name__}: {error}); define or import the "
                    "type at module level where the function is defined (a name imported only "
                    "under TYPE_CHECKING does not exist at run time)"
                ) from None
        params.append(param)
    return signature.replace(parameters=params, return_annotation=inspect.Signature.empty)


def _call_method(function: Any) -> Any:
    """A callable instance's ``__call__`` method (None for functions, methods and classes)."""
    if inspect.isroutine(function) or isinstance(function, type):
        return None
    return getattr(function, "__call__", None)  # noqa: B004 - not a callable() check


def _globals_of(function: Callable[..., Any]) -> dict[str, Any]:
    """The globals ``inspect`` evaluates the function's string annotations in."""
    target: Any = function.func if isinstance(function, functools.partial) else function
    target = _call_method(target) or target
    target = inspect.unwrap(getattr(target, "__func__", target))
    return getattr(target, "__globals__", {})


def check_kind(param: inspect.Parameter, label: str) -> None:
    """Refuse parameters the model cannot fill by name (``*args``, ``**kwargs``, before ``/``)."""
    if (
        param.kind is inspect.Parameter.VAR_POSITIONAL
        or param.kind is inspect.Parameter.VAR_KEYWORD
    ):
        stars = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise ConfigurationError(
            f"{label}: parameter '{stars}{param.name}' cannot be filled by the model, which passes "
            "named JSON arguments: declare each argument as a named, typed parameter"
        )
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise ConfigurationError(
            f"{label}: parameter '{param.name}' is positional-only, but tools are called with "
            "keyword arguments: remove the '/' (or wrap the function in a 'def' without one)"
        )


def check_name(param: str, label: str) -> None:
    """Refuse parameter names the arguments model would drop or reject."""
    if param.startswith("_"):
        raise ConfigurationError(
            f"{label}: parameter '{param}' starts with '_', which pydantic treats as private, "
            "so it would be left out of the schema and the model could never pass it: rename "
            "it (to keep a value from the model, set it inside the function)"
        )
    if param.startswith("model_") and hasattr(BaseModel, param):
        raise ConfigurationError(
            f"{label}: parameter '{param}' clashes with the pydantic model attribute of that "
            "name (arguments are validated by a pydantic model): rename it"
        )


def _type_problem(label: str, fields: dict[str, Any], error: Exception) -> str:
    culprit = ""
    for param, (annotation, _) in fields.items():
        try:
            TypeAdapter(annotation).json_schema()
        except (PydanticUserError, PydanticUndefinedAnnotation):
            culprit = f" of parameter '{param}' ({annotation!r})"
            break
    reason = str(error).splitlines()[0]
    return (
        f"{label}: pydantic cannot validate the type{culprit} or describe it in JSON Schema "
        f"({reason}); annotate it with a JSON type (str, int, float, bool, list, dict), a "
        "pydantic model or a TypedDict, or give the class a __get_pydantic_core_schema__"
    )


def arguments_model(
    name: str, label: str, fields: dict[str, Any]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """The arguments model of ``fields`` (``create_model`` definitions) and its JSON Schema."""
    try:
        with warnings.catch_warnings():
            # Legacy names such as ``json`` or ``copy`` shadow BaseModel methods harmlessly: the
            # arguments are read from the instance's __dict__, never through those methods.
            warnings.filterwarnings("ignore", _SHADOWS_WARNING, UserWarning)
            model = create_model(
                f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
        return model, model.model_json_schema()
    except (PydanticUserError, PydanticUndefinedAnnotation) as error:
        raise ConfigurationError(_type_problem(label, fields, error)) from None
