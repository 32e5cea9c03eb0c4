"""Checks a tool call's arguments against the tool's JSON schema, so the model gets a precise complaint."""

from __future__ import annotations

from typing import Any

from mimo_core.tools.base import ToolError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_args(tool: str, schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """Raise ToolError naming the missing, unknown or mistyped argument; return the arguments."""
    if not isinstance(args, dict):
        raise ToolError(f"{tool}: arguments must be a JSON object, got {type(args).__name__}")
    props: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        raise ToolError(f"{tool}: missing required argument(s) {missing}; expected {sorted(props)}")
    unknown = [k for k in args if k not in props]
    if unknown:
        raise ToolError(f"{tool}: unknown argument(s) {unknown}; expected {sorted(props)}")
    for key, value in args.items():
        want = props[key].get("type")
        ok = _TYPES.get(want)
        if ok is None or value is None and key not in schema.get("required", []):
            continue
        if not isinstance(value, ok) or (want in ("integer", "number") and isinstance(value, bool)):
            raise ToolError(f"{tool}: argument {key!r} must be of type {want}, got {type(value).__name__}")
    return args
