"""The pydantic base of every config block and row model: numbers are numbers.

Pydantic's lax mode reads `step_limit: true` as 1 and `timeout: .inf` as a timeout that never ends (or
an overflow deep in a socket call). Strings stay accepted for numbers, since `${VAR:-50}` expands to
text; booleans, infinities and NaN do not.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


@functools.cache
def _wants_number(annotation: Any) -> bool:
    """True for int, float and their optional or annotated forms; False where a bool is also allowed."""
    if annotation in (int, float):
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _wants_number(args[0])
    if origin in (typing.Union, types.UnionType):
        return bool not in args and any(_wants_number(a) for a in args)
    return False


class NumbersAreNumbers(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            # A type form is hashable (what functools.cache needs); mypy does not count TypeForm as Hashable.
            if field is not None and _wants_number(field.annotation):  # type: ignore[arg-type]
                raise ValueError(f"expected a number, got the boolean {str(value).lower()}")
        return value


def problem_text(err: Any) -> str:
    """One pydantic error as the user reads it: "unknown key", or the message without pydantic's
    "Value error, " prefix, on one line."""
    if err["type"] == "extra_forbidden":
        return "unknown key"
    return " ".join(str(err["msg"]).removeprefix("Value error, ").split())


def dotted(loc: Any) -> str:
    """A pydantic error location as a dotted key; a key that is not a plain word is quoted, so a user's
    key with a newline or a dot in it cannot break the one-line message or pass for a path."""
    parts = [str(p) if isinstance(p, int) or _PLAIN.fullmatch(str(p)) else repr(p) for p in loc]
    return ".".join(parts)


_PLAIN = re.compile(r"[\w-]+")
