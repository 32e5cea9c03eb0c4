"""What `environment.backend_kwargs` may hold for `e2b` and `cube`, the credentials, and which template a
row's image starts from."""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.errors import ConfigError

API_KEY_VAR = "E2B_API_KEY"  # the SDK's own variable; never written anywhere (redacted when registered)


class E2BOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_url: str | None = None  # default: $E2B_API_URL, else the SDK's https://api.<domain>
    domain: str | None = None  # default: $E2B_DOMAIN, else e2b.app
    sandbox_url: str | None = None  # envd's URL for every sandbox (default: $E2B_SANDBOX_URL, else per sandbox)
    template: str | None = None  # one template for every row (else `templates`, else named after the image)
    templates: dict[str, str] = Field(default_factory=dict)  # image (with image_prefix) -> template id or alias
    fallback_template: str | None = None  # rows that name no image
    lifetime: int = Field(default=3600, ge=60, le=86400)  # seconds E2B keeps a sandbox alive after its creation
    request_timeout: float = Field(default=60.0, gt=0)
    user: str = "root"  # who commands run as (E2B's default user is `user`; grading needs root)
    scratch_dir: str = "/tmp/.mimo"


class CubeOptions(E2BOptions):
    """CubeSandbox speaks E2B's API at your own deployment's URL: there is no public default."""


def template_for(image: str | None, options: E2BOptions) -> str | None:
    """The template a row's image starts from: `templates[image]`, else `template`, else the image's name made
    a template alias (`registry/ns/python:3.11` -> `registry-ns-python-3-11`); `fallback_template` without
    an image."""
    if not image:
        return options.fallback_template or options.template
    if image in options.templates:
        return options.templates[image]
    if options.template:
        return options.template
    return re.sub(r"[^a-z0-9_-]+", "-", image.lower()).strip("-")[:120] or None


def check_credentials(backend: str, options: E2BOptions) -> str:
    """The API key, or a one-line ConfigError naming what is missing (before any rollout starts)."""
    key = os.environ.get(API_KEY_VAR, "")
    if not key:
        raise ConfigError(
            f"environment_class {backend}: {API_KEY_VAR} is not set: export your "
            f"{'CubeSandbox' if backend == 'cube' else 'E2B'} API key as {API_KEY_VAR}"
        )
    if backend == "cube" and not (options.api_url or os.environ.get("E2B_API_URL")):
        raise ConfigError(
            "environment_class cube: no API URL: set environment.backend_kwargs.api_url (or E2B_API_URL) "
            "to your CubeSandbox deployment's E2B-compatible endpoint"
        )
    from mimo_core.base.redaction import register

    register([key])
    return key
