"""The `read`, `write` and `edit` tools: file access through the Environment's file methods.

Paths are absolute or relative to the environment's working directory (not the bash session's current
directory, which these tools cannot see). Files are decoded with `surrogateescape`, so an edit leaves
bytes that are not UTF-8 exactly as they were.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.environments.base import Environment, FileHead, read_head
from mimo_core.limits import current_limits, truncation_note
from mimo_core.models.messages import ToolSchema
from mimo_core.tools.args import check_args
from mimo_core.tools.base import ToolError, ToolResult
from mimo_core.tools.truncate import truncate_middle

_PATH = {
    "type": "string",
    "description": "Path of the file: absolute, or relative to the working directory.",
}


class FileToolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_output_chars: int | None = None  # default: agent.observation_max_chars
    max_read_bytes: int | None = Field(None, gt=0, le=1 << 30)  # default: limits.max_read_bytes


def _load(env: Environment, path: str, max_bytes: int) -> FileHead:
    """At most `max_bytes` of the file, read in the sandbox before anything is decoded."""
    try:
        return read_head(env, path, max_bytes)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory, not a file; list it with bash (ls)") from None
    except OSError as e:
        raise ToolError(f"cannot read {path}: {e.strerror or e}") from None


def _text(data: bytes, path: str) -> str:
    if b"\0" in data[:8192]:
        raise ToolError(f"{path} looks like a binary file; inspect it with bash (e.g. xxd | head)")
    return data.decode("utf-8", errors="surrogateescape")


def _store(env: Environment, path: str, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    try:
        env.write_file(path, data)
    except FileNotFoundError:
        # Backends whose write_file does not create parent folders: make them, then retry once.
        parent = os.path.dirname(path)
        env.execute(f"mkdir -p -- {shlex.quote(parent)}")
        try:
            env.write_file(path, data)
        except OSError as e:
            raise ToolError(f"cannot write {path}: {e.strerror or e}") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory; give a file path") from None
    except OSError as e:
        raise ToolError(f"cannot write {path}: {e.strerror or e}") from None


def _numbered(lines: list[str], first: int) -> str:
    return "".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


class ReadTool:
    config_model = FileToolConfig  # what its `tools:` entry's `config:` may hold (tools/registry.py)

    @classmethod
    def from_config(cls, config: FileToolConfig, default_timeout: float | None, observation_max_chars: int) -> ReadTool:
        return cls(config, observation_max_chars)

    def __init__(self, config: FileToolConfig | None = None, observation_max_chars: int = 10000) -> None:
        config = config or FileToolConfig()
        self.max_chars = config.max_output_chars or observation_max_chars
        self.max_bytes = config.max_read_bytes  # None: the rollout's limits.max_read_bytes
        self.schema = ToolSchema(
            name="read",
            description=(
                "Read a text file and return its lines prefixed with 1-based line numbers and a tab "
                "(the numbers are not part of the file). Give start_line/end_line to read part of a "
                "long file; long output is shortened to its beginning and end, and only the first "
                "part of a very large file is read (use bash for the rest)."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": _PATH,
                    "start_line": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to show, 1-based (default: 1).",
                    },
                    "end_line": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Last line to show, inclusive (default: the last line).",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        check_args("read", self.schema.parameters, args)
        path = args["path"]
        start, end = args.get("start_line") or 1, args.get("end_line")
        if start < 1 or (end is not None and end < start):
            raise ToolError(f"read: need 1 <= start_line <= end_line, got start_line={start}, end_line={end}")
        head = _load(env, path, self.max_bytes or current_limits().max_read_bytes)
        lines = _text(head.data, path).splitlines(keepends=True)
        cut = truncation_note(head.size, len(head.data)) if head.truncated else ""
        more = (
            (
                f"{cut}: the first {len(head.data)} bytes hold lines 1-{len(lines)} (the last one may be "
                f"cut); read further with bash (e.g. sed -n '{len(lines)},+100p' or tail -c)"
            )
            if cut
            else ""
        )
        if not lines:
            return ToolResult(output=f"({path} is empty)")
        if start > len(lines):
            if cut:
                raise ToolError(f"read: start_line={start} is past what was read of {path}. {more}")
            raise ToolError(f"read: start_line={start} is past the end of {path} ({len(lines)} lines)")
        end = len(lines) if end is None else min(end, len(lines))
        body, total = _numbered(lines[start - 1 : end], start), len(lines)
        del lines  # only what is shown is kept
        if not body.endswith("\n"):
            body += "\n"
        if len(body) > self.max_chars:
            body = truncate_middle(body, self.max_chars)
            body += (
                f"\n{more}\n"
                if cut
                else f"\n[{path} has {total} lines; use start_line/end_line to read a smaller range]\n"
            )
        elif cut:
            body += f"{more}\n"
        elif start > 1 or end < total:
            body += f"[lines {start}-{end} of {total}]\n"
        return ToolResult(output=body)


class WriteTool:
    def __init__(self, config: FileToolConfig | None = None, observation_max_chars: int = 10000) -> None:
        self.schema = ToolSchema(
            name="write",
            description=(
                "Create or overwrite a file with the given content, creating parent directories as "
                "needed. To change part of an existing file, prefer edit."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": _PATH,
                    "content": {"type": "string", "description": "The complete new content of the file."},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        check_args("write", self.schema.parameters, args)
        content: str = args["content"]
        _store(env, args["path"], content)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        return ToolResult(output=f"Wrote {len(content)} characters ({lines} lines) to {args['path']}")


class EditTool:
    def __init__(self, config: FileToolConfig | None = None, observation_max_chars: int = 10000) -> None:
        self.schema = ToolSchema(
            name="edit",
            description=(
                "Replace an exact string in a file. old_string must match the file exactly, including "
                "whitespace and indentation (do not include the line numbers shown by read), and must "
                "occur exactly once unless replace_all is true; include enough surrounding lines to "
                "make it unique."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": _PATH,
                    "old_string": {"type": "string", "description": "The exact text to replace (non-empty)."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence instead of exactly one (default: false).",
                    },
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        check_args("edit", self.schema.parameters, args)
        path, old, new = args["path"], args["old_string"], args["new_string"]
        if not old:
            raise ToolError("edit: old_string is empty; to create or overwrite a file use write")
        if old == new:
            raise ToolError("edit: old_string and new_string are identical; nothing would change")
        limit = current_limits().max_read_bytes
        head = _load(env, path, limit)
        if head.truncated:
            raise ToolError(
                f"edit: {path} is larger than the file tools read "
                f"({truncation_note(head.size, len(head.data))}; limits.max_read_bytes); change it "
                "with bash (sed, a script)"
            )
        text = _text(head.data, path)
        count = text.count(old)
        if count == 0:
            raise ToolError(
                f"edit: old_string was not found in {path} (0 matches). It must match exactly, including "
                "whitespace and indentation; read the file to copy the current text."
            )
        if count > 1 and not args.get("replace_all"):
            raise ToolError(
                f"edit: old_string matches {count} times in {path}; include more surrounding lines so it "
                "matches exactly once, or set replace_all to true to replace all of them."
            )
        at = text.index(old)
        grown = len(text) + count * max(0, len(new) - len(old)) if args.get("replace_all") else len(text) + len(new)
        if grown > limit:
            raise ToolError(
                f"edit: the result would be over {limit} characters (limits.max_read_bytes); change the file with bash"
            )
        updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
        _store(env, path, updated)
        first = text.count("\n", 0, at) + 1
        lines = updated.splitlines(keepends=True)
        lo, hi = max(first - 3, 1), min(first + new.count("\n") + 3, len(lines))
        snippet = _numbered(lines[lo - 1 : hi], lo)
        done = f"{count} occurrences" if count > 1 else "1 occurrence"
        return ToolResult(output=f"Edited {path}: replaced {done}. Lines {lo}-{hi} now:\n{snippet}")
