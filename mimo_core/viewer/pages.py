"""The viewer's pages, rendered on the server from jinja2 templates (autoescaped: transcripts are the
model's text and tool output, never trusted as HTML). The run page is paged, so its cost does not grow
with the folder; a rollout's files are read only when its page is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response

from mimo_core.records.model_calls import AgentMsgsError, read_step
from mimo_core.viewer.folders import OutputFolder, RolloutQuery
from mimo_core.viewer.rollout_view import arm_rollout, build_rollout
from mimo_core.viewer.urls import file_path, rollout_path, run_path

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.globals.update(run_path=run_path, rollout_path=rollout_path, file_path=file_path)
_env.filters["reward"] = lambda v: "–" if v is None else f"{v:g}"
_env.filters["cost"] = lambda v: f"{v:.4f}"
_env.filters["secs"] = lambda v: f"{v:.1f}"
_env.filters["num"] = lambda v: f"{v:,}"
_env.filters["rate"] = lambda v: "–" if v is None else f"{100 * v:.1f}%"  # mimo_core.records.rates' rates


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status)


def not_found(what: str, folders: list[OutputFolder]) -> HTMLResponse:
    return render("error.html", 404, message=what, folders=folders)


class Pages:
    """Request handlers over a fixed set of output folders."""

    def __init__(self, folders: list[OutputFolder]):
        self.folders = folders
        self.by_slug = {f.slug: f for f in folders}

    def _folder(self, request: Request) -> OutputFolder | None:
        return self.by_slug.get(request.path_params["slug"])

    def _missing_folder(self, request: Request) -> HTMLResponse:
        return not_found(
            f"this viewer does not serve an output folder named {request.path_params['slug']!r}; "
            "start `mimoagent view` on that folder",
            self.folders,
        )

    def home(self, request: Request) -> HTMLResponse:
        return render("home.html", folders=self.folders)

    def run(self, request: Request) -> HTMLResponse:
        folder = self._folder(request)
        if folder is None:
            return self._missing_folder(request)
        params = {k: v for k, v in request.query_params.items() if v != ""}
        try:
            query = RolloutQuery.model_validate(params)
        except ValidationError as e:
            bad = ", ".join(".".join(map(str, err["loc"])) for err in e.errors())
            return render("error.html", 400, message=f"bad filter value for {bad}", folders=self.folders)
        page = folder.query(query)
        configs, statuses = folder.facets()

        def link(**changes: Any) -> str:
            merged = {**params, **{k: v for k, v in changes.items()}}
            return "?" + urlencode({k: v for k, v in merged.items() if v not in ("", None, False)})

        def sort_link(column: str) -> str:
            return link(sort=column, desc=1 if query.sort == column and not query.desc else "", page="")

        return render(
            "run.html",
            folder=folder,
            query=query,
            page=page,
            configs=configs,
            statuses=statuses,
            summaries=folder.summaries(),
            link=link,
            sort_link=sort_link,
            torn=folder.torn_note(),
        )

    def rollout(self, request: Request) -> HTMLResponse:
        folder = self._folder(request)
        if folder is None:
            return self._missing_folder(request)
        rel = request.path_params["rollout"].strip("/")
        record = folder.record(rel)
        if record is None:
            return not_found(
                f"{folder.path}: no finished rollout in {rel!r} (results.jsonl has no line for it)", self.folders
            )
        view = build_rollout(folder.path, record)
        others = [f"{f.slug}:{record.config_name}" for f in self.folders]
        return render("rollout.html", folder=folder, view=view, ab_link=_ab_link(record.instance_id, others[0]))

    def step(self, request: Request) -> Response:
        """One model call's request as it was sent, rebuilt from agent_msgs/ (mimo_core.records.model_calls)."""
        folder = self._folder(request)
        rel, n = request.query_params.get("r", ""), request.query_params.get("n", "")
        record = folder.record(rel) if folder is not None else None
        if folder is None or record is None or not n.isdigit():
            return JSONResponse({"error": "no such rollout or step"}, status_code=404)
        try:
            call = read_step(folder.path / record.output_dir / "agent_msgs", int(n))
        except (AgentMsgsError, OSError, ValueError) as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        return JSONResponse({"step": call.step, "request": call.request, "response": call.response})

    def file(self, request: Request) -> Response:
        """A file of the output folder, as plain text whatever its name (never rendered as a page)."""
        folder = self._folder(request)
        if folder is None:
            return self._missing_folder(request)
        path = (folder.path / request.path_params["rel"]).resolve()
        if not path.is_relative_to(folder.path) or not path.is_file():
            return not_found(f"no file {request.path_params['rel']!r} in {folder.path}", self.folders)
        return FileResponse(
            path,
            media_type="text/plain; charset=utf-8",
            content_disposition_type="inline",
            headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"},
        )

    def instance(self, request: Request) -> HTMLResponse:
        """The A/B view: the rollouts of one instance under two arms (an arm = output folder + config)."""
        instance_id = request.query_params.get("id", "")
        arms: dict[str, tuple[OutputFolder, str]] = {}
        found: dict[str, list[Any]] = {}
        for f in self.folders:
            for r in f.records():
                if r.instance_id == instance_id:
                    key = f"{f.slug}:{r.config_name}"
                    arms[key] = (f, r.config_name)
                    found.setdefault(key, []).append(r)
        if not arms:
            return not_found(f"no rollout of instance {instance_id!r} in the served folders", self.folders)
        keys = list(arms)
        a = request.query_params.get("a") or keys[0]
        b = request.query_params.get("b") or next((k for k in keys if k != a), a)
        columns = []
        for key in (a, b):
            if key not in arms:
                return not_found(f"instance {instance_id!r} has no rollouts under {key!r}", self.folders)
            folder, config = arms[key]
            columns.append(
                {
                    "key": key,
                    "folder": folder,
                    "config": config,
                    "rollouts": [
                        arm_rollout(folder.path, r) for r in sorted(found[key], key=lambda r: r.rollout_index)
                    ],
                }
            )
        return render(
            "instance.html",
            instance_id=instance_id,
            arms=keys,
            a=a,
            b=b,
            columns=columns,
            label=lambda key: _arm_label(key, arms, len(self.folders) > 1),
        )


def _ab_link(instance_id: str, arm: str) -> str:
    return "/instance?" + urlencode({"id": instance_id, "a": arm})


def _arm_label(key: str, arms: dict[str, tuple[OutputFolder, str]], many: bool) -> str:
    folder, config = arms[key]
    return f"{config} ({folder.path.name})" if many else config
