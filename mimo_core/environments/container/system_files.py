"""Grading a pristine system: what the agent changed outside the paths it may change is put back.

In-place grading runs the verifier in the container the agent used. Its edits to the repository are its
work; its edits elsewhere (a `.pth` in site-packages, a `/usr/local/bin/python3` shim, files under
`/root/.local`, `/etc`, a `/conftest.py`) must not reach the verifier. `discard_system_changes(keep)`
finds every path outside `keep` whose inode changed after the baseline (`mark_system_baseline`: the
container's own clock, read by the runner and kept outside the container), and puts it back to the image's
version, taken from a reference container (docker) or pod (kubernetes) of the same image started only
when something needs it:

- found by status-change time (`find / -xdev -newerct @T`): ctime cannot be set back by a process
  (`touch -d` sets mtime only), so a back-dated file is found too. Mount points (`/proc`, `/sys`, `/dev`,
  `/etc/hosts`, `/etc/resolv.conf`, `/etc/hostname`, the CLI cache, ...) and `keep` are not walked.
- added paths (absent from the image) are removed; changed ones (files, links, a folder turned file)
  are restored from the image; folders whose mode or owner changed get the image's; entries deleted from
  a changed folder are restored. Folders that changed only because something under them changed are
  not reported.
- temporary files (under /tmp and /var/tmp) and bytecode caches (files in `__pycache__`) are removed
  without being reported: honest test runs make them, nothing needs them, and a planted `.pyc` goes.

Not seen: a deletion or a folder's mode change, on its own, in a folder that holds a kept path (`/`,
`/tmp`, ...) or when nothing but folders changed elsewhere; files whose inode the agent did not touch.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mimo_core.errors import SandboxError

REPORT_CAP = 200  # entries returned; then one "... and N more"
_PRUNED = ("/proc", "/sys", "/dev")
_TEMP = ("/tmp", "/var/tmp")
_END = b"END "


class Runner(Protocol):
    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]: ...

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None: ...


@dataclass(frozen=True)
class Entry:
    kind: str  # find's %y: f d l p s c b
    mode: str  # octal permission bits
    uid: str
    gid: str
    path: str


def _glob_escape(path: str) -> str:
    return re.sub(r"([*?\[\\])", r"\\\1", path)


def _norm(path: str) -> str:
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _ancestors(path: str) -> Iterable[str]:
    while path != "/":
        path = path.rsplit("/", 1)[0] or "/"
        yield path


def _parse(raw: bytes, prefix: str = "") -> tuple[list[Entry], list[str], int | None]:
    """find's `%y %m %U %G %p\\0` records (after `prefix`), `L<path>\\0` listings and the `END rc` record."""
    entries: list[Entry] = []
    listed: list[str] = []
    rc = None
    for rec in raw.split(b"\0"):
        if not rec:
            continue
        if rec.startswith(_END):
            rc = int(rec[len(_END) :].strip() or b"1")
            continue
        text = rec.decode("utf-8", errors="surrogateescape")
        if text.startswith("L"):
            listed.append(text[1:])
            continue
        if prefix and not text.startswith(prefix):
            continue
        fields = text[len(prefix) :].split(" ", 4)
        if len(fields) == 5:
            entries.append(Entry(*fields))
    return entries, listed, rc


def find_script(since: str, prune: list[str]) -> str:
    """`sh` code printing every inode under / (this filesystem) whose status changed after `since`
    (epoch seconds), outside `prune` and every mount point, then `END <find's exit code>`."""
    pruned = " ".join(f"-o -path {shlex.quote(_glob_escape(p))}" for p in prune)
    return (
        'set --; while read -r _ _ _ _ mp _; do [ "$mp" = / ] || '
        'set -- "$@" -o -path "$(printf \'%b\' "$mp")"; done < /proc/self/mountinfo; '
        f'find / -xdev \\( -path /proc {pruned} "$@" \\) -prune -o -newerct @{since} '
        "-printf '%y %m %U %G %p\\0' 2>/dev/null; printf 'END %s\\0' $?"
    )


def _stat_script(paths_file: str, dirs_file: str) -> str:
    """Stat each path of `paths_file` (NUL-separated) and list each folder of `dirs_file`."""
    p, d = shlex.quote(paths_file), shlex.quote(dirs_file)
    return (
        f'xargs -0 -r sh -c \'find "$@" -maxdepth 0 -printf "S%y %m %U %G %p\\0"\' _ < {p} 2>/dev/null; '
        f'xargs -0 -r sh -c \'find "$@" -mindepth 1 -maxdepth 1 -printf "L%p\\0"\' _ < {d} 2>/dev/null; '
        "printf 'END 0\\0'"
    )


def _nul(paths: Iterable[str]) -> bytes:
    return b"".join(p.encode("utf-8", errors="surrogateescape") + b"\0" for p in paths)


def _top(paths: Iterable[str]) -> list[str]:
    """The paths not under another one of them."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return out


def _cap(report: list[str]) -> list[str]:
    if len(report) <= REPORT_CAP:
        return report
    return [*report[:REPORT_CAP], f"... and {len(report) - REPORT_CAP} more"]


class SystemFiles:
    """One pass of `discard_system_changes` over a live container (`env`)."""

    def __init__(self, env: Any, since: str, keep: list[str]) -> None:
        self.env = env
        self.since = since
        self.keep = _top(_norm(k) for k in keep if k and k.startswith("/"))
        self.keep_ancestors = {a for k in self.keep for a in _ancestors(k)}

    def _kept(self, path: str) -> bool:
        return any(_under(path, k) for k in self.keep)

    def _quiet(self, e: Entry) -> bool:
        """Temporary files and bytecode caches: removed (when not a kept path's folder), not reported."""
        if any(_under(e.path, t) and e.path != t for t in _TEMP):
            return True
        name = e.path.rsplit("/", 1)[-1]
        return name == "__pycache__" or e.path.rsplit("/", 2)[-2:-1] == ["__pycache__"]

    def run(self) -> list[str]:
        env = self.env
        code, raw, err = env.exec_bytes(find_script(self.since, [*_PRUNED, *self.keep]), timeout=600)
        found, _, rc = _parse(raw)
        if rc is None or (rc != 0 and not found):  # a find without -newerct, ...: nothing it said is known
            raise SandboxError(
                f"{env._where()}: listing the changed system files failed (exit {code}, find {rc}): "
                f"{raw[-300:].decode(errors='replace')}{err[:300]}"
            )
        found = [Entry(e.kind, e.mode, e.uid, e.gid, _norm(e.path)) for e in found if not self._kept(_norm(e.path))]
        quiet_rm: list[str] = []
        real: list[Entry] = []
        for e in found:
            if self._quiet(e):
                if e.path not in self.keep_ancestors and not (e.kind == "d" and e.path.endswith("/__pycache__")):
                    quiet_rm.append(e.path)
            else:
                real.append(e)
        paths = {e.path for e in found}
        parents = {a for p in paths for a in _ancestors(p)} | self.keep_ancestors
        # What needs the image: anything but a folder, or a folder that changed for a reason of its own.
        trigger = [e for e in real if e.kind != "d" or e.path not in parents]
        report: list[str] = []
        if trigger:
            report = self._restore(real)
        if quiet_rm:
            self._remove(_top(quiet_rm), [])
        if trigger or quiet_rm:
            env.mark_system_baseline()  # what was put back is the baseline now: a second pass finds nothing
        return _cap(report)

    # -- with the image ------------------------------------------------------------------------------

    def _restore(self, real: list[Entry]) -> list[str]:
        env = self.env
        try:
            ref_cm = env._reference()
            ref = ref_cm.__enter__()
        except Exception as e:
            why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            return [
                f"unrestored {x.path} (the image could not be started to compare: {why})" for x in real if x.kind != "d"
            ]
        try:
            return self._against(ref, real)
        finally:
            ref_cm.__exit__(None, None, None)

    def _stat(
        self, runner: Runner, where: str, paths: list[str], dirs: list[str]
    ) -> tuple[dict[str, Entry], dict[str, set[str]]]:
        pf, df = f"{where}/stat-paths", f"{where}/stat-dirs"
        runner.write_file(pf, _nul(paths))
        runner.write_file(df, _nul(dirs))
        code, raw, err = runner.exec_bytes(_stat_script(pf, df), timeout=600)
        entries, listed, rc = _parse(raw, prefix="S")
        if rc is None:
            raise SandboxError(f"stat in {where} failed (exit {code}): {err[:300]}")
        children: dict[str, set[str]] = {d: set() for d in dirs}
        for p in listed:
            parent = p.rsplit("/", 1)[0] or "/"
            children.setdefault(_norm(parent), set()).add(_norm(p))
        return {_norm(e.path): e for e in entries}, children

    def _against(self, ref: Any, real: list[Entry]) -> list[str]:
        env = self.env
        paths = sorted(e.path for e in real)
        dirs = sorted(e.path for e in real if e.kind == "d")
        image, image_children = self._stat(ref, "/tmp", paths, dirs)
        _, live_children = self._stat(env, env.scratch_dir, [], dirs)
        remove: list[str] = []
        restore: list[str] = []
        fix: list[tuple[Entry, Entry]] = []
        report: list[tuple[str, str]] = []
        added_dirs: list[str] = []
        for e in sorted(real, key=lambda x: x.path):
            if any(_under(e.path, a) for a in added_dirs):
                continue  # goes with its folder
            old = image.get(e.path)
            if old is None:
                remove.append(e.path)
                report.append(("added", e.path))
                if e.kind == "d":
                    added_dirs.append(e.path)
            elif old.kind != e.kind or e.kind != "d":
                remove.append(e.path)
                restore.append(e.path)
                report.append(("changed", e.path))
            elif (old.mode, old.uid, old.gid) != (e.mode, e.uid, e.gid):
                fix.append((e, old))
                report.append(("changed", e.path))
        for d in dirs:
            if d in image and image[d].kind == "d" and not any(_under(d, a) for a in added_dirs):
                for gone in sorted(image_children.get(d, set()) - live_children.get(d, set())):
                    if self._kept(gone) or any(_under(gone, t) for t in _TEMP) or gone.endswith("/__pycache__"):
                        continue
                    restore.append(gone)
                    report.append(("deleted", gone))
        restore = _top(restore)
        archive = b""
        if restore:
            lf = "/tmp/restore-list"
            ref.write_file(lf, _nul(p.lstrip("/") for p in restore))
            code, archive, err = ref.exec_bytes(f"tar -C / --null -cf - -T {lf} 2>/dev/null", timeout=600)
            if code not in (0, 1) or not archive:
                bad = set(restore)
                report = [(k, p) for k, p in report if p not in bad] + [
                    ("unrestored", f"{p} (taking it from the image failed: exit {code} {err[:100]})") for p in restore
                ]
                remove = [p for p in remove if p not in bad]
                archive = b""
        self._remove(_top(remove), fix)
        if archive:
            env._extract_root(archive)
        return [f"{kind} {path}" for kind, path in sorted(report, key=lambda r: (r[1], r[0]))]

    def _remove(self, paths: list[str], fix: list[tuple[Entry, Entry]]) -> None:
        env = self.env
        if not paths and not fix:
            return
        script = ""
        if paths:
            lf = f"{env.scratch_dir}/remove-list"
            env.write_file(lf, _nul(paths))
            script += f"xargs -0 -r rm -rf -- < {shlex.quote(lf)}; "
        for _, old in fix:
            q = shlex.quote(old.path)
            script += f"chown -h {old.uid}:{old.gid} {q}; chmod {old.mode} {q}; "
        code, raw, err = env.exec_bytes(script + "true", timeout=600)
        if code != 0:
            raise SandboxError(
                f"{env._where()}: removing the agent's system changes failed (exit {code}): "
                f"{raw[-300:].decode(errors='replace')}{err[:300]}"
            )
