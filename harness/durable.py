"""Files the results directory trusts: written whole and durably, read back into a model in one line.

A write goes to a temporary name in the same folder, is fsynced and renamed over the target, then the
folder is synced, so a crash leaves the old file or the new one, never a part of either. A read that
fails names the file and the first bad field, with the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agentrel.harness.errors import UserError

M = TypeVar("M", bound=BaseModel)


def write_durably(path: Path, data: bytes, *, replace: bool = True) -> bool:
    """Write `path` whole; False (nothing written) when `replace` is off and the file exists: a link, not
    a rename, so of two concurrent writers only one wins. Raises OSError (the temporary file removed)
    for the caller to name the folder and the fix."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            tmp.replace(path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
    finally:
        tmp.unlink(missing_ok=True)
    sync_folder(path.parent)
    return True


def sync_folder(folder: Path) -> None:
    """Make a new name in `folder` durable (the file's own fsync does not cover its directory entry)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_model(path: Path, model: type[M], what: str, fix: str = "restore the file") -> M:
    """The JSON file at `path` as `model`; one line naming the file and the first bad field otherwise."""
    try:
        return model.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    except ValidationError as exc:
        from agentrel.harness.yamlfile import field_problem

        raise UserError(f"{path}: not {_article(what)} {what}: {field_problem(exc)}; {fix}") from None


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"
