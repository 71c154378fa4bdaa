"""`--model-meta FILE`: what the user says about a model server that the server does not say itself.

A YAML (or JSON) mapping; every field is optional and every one given joins the subject's config (so two
audits of the same alias on different weights differ in their subject config hash). A chat template given
as text is kept as its SHA-256, like the one a server reports. A `weights_path` (a local file) is hashed at
audit start and checked against `weights_sha256` and the server's claim (weights_check.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentrel.harness.yamlfile import load_model

SHA256 = r"^[0-9a-f]{64}$"


class ModelMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: str | None = Field(default=None, description="the weights file's name or source")
    weights_sha256: str | None = Field(default=None, pattern=SHA256)
    weights_path: str | None = Field(
        default=None, description="the weights file on this machine: hashed and checked at audit start"
    )
    quantization: str | None = None
    chat_template: str | None = Field(default=None, description="the template text (kept as its SHA-256)")
    chat_template_sha256: str | None = Field(default=None, pattern=SHA256)
    server: str | None = Field(default=None, description="e.g. llama.cpp, vLLM, Ollama, llama-cpp-python")
    server_version: str | None = None
    context_size: int | None = Field(default=None, ge=1)
    notes: str | None = None


def load_model_meta(path: Path) -> dict[str, Any]:
    """The file's declarations as they join the subject's config; one-line UserError naming the field."""
    meta = load_model(ModelMeta, path)
    declared = meta.model_dump(exclude_none=True)
    if "chat_template" in declared:
        digest = hashlib.sha256(declared.pop("chat_template").encode()).hexdigest()
        declared.setdefault("chat_template_sha256", digest)
    return declared
