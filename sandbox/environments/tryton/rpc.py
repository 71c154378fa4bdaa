"""Tryton's JSON-RPC over loopback: `POST /DB/` with a session key, Tryton's own value encoding, and
Tryton's own refusals turned into tool errors carrying their text.

A `UserError` (a business rule said no) and a `UserWarning` (Tryton asks the user to confirm, e.g. a
past-dated posting) reach the agent as they would reach a clerk at Tryton's client: the message, its
description, and for a warning the name `acknowledge_warning` takes. Anything else (a bug, a crash) is
said in one line; its traceback stays in the server's log.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
from decimal import Decimal
from typing import Any

import httpx

from agentrel.sandbox.tools.base import ToolError, cut

CALL_TIMEOUT_S = 60.0
_ids = itertools.count(1)


class TrytonWarning(ToolError):
    """Tryton asks for a confirmation: the call did nothing; acknowledging `name` lets it through."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def encode(value: Any) -> Any:
    """Python values in Tryton's JSON form (Decimal, date and datetime as tagged objects)."""
    if isinstance(value, Decimal):
        return {"__class__": "Decimal", "decimal": str(value)}
    if isinstance(value, dt.datetime):
        return {
            "__class__": "datetime", "year": value.year, "month": value.month, "day": value.day,
            "hour": value.hour, "minute": value.minute, "second": value.second,
            "microsecond": value.microsecond,
        }  # fmt: skip
    if isinstance(value, dt.date):
        return {"__class__": "date", "year": value.year, "month": value.month, "day": value.day}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def _decode_object(obj: dict[str, Any]) -> Any:
    kind = obj.get("__class__")
    if kind == "Decimal":
        return Decimal(obj["decimal"])
    if kind == "date":
        return dt.date(obj["year"], obj["month"], obj["day"])
    if kind == "datetime":
        return dt.datetime(
            obj["year"], obj["month"], obj["day"], obj["hour"], obj["minute"], obj["second"],
            obj.get("microsecond", 0),
        )  # fmt: skip
    if kind == "timedelta":
        return dt.timedelta(seconds=obj["seconds"])
    if kind == "bytes":
        return f"<{len(base64.b64decode(obj['base64']))} bytes>"
    return obj


def plain(value: Any) -> Any:
    """Tryton's values as the agent sees them: Decimal as a string of its digits, dates ISO-8601."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class Client:
    """One logged-in clerk on one server: `call("model.account.invoice.post", [ids, context])`."""

    def __init__(self, url: str, login: str, user_id: int, key: str) -> None:
        token = base64.b64encode(f"{login}:{user_id}:{key}".encode()).decode()
        self.url = url
        self._http = httpx.Client(
            headers={"Authorization": f"Session {token}"}, timeout=CALL_TIMEOUT_S, trust_env=False
        )
        self._context: dict[str, Any] | None = None
        self._fields: dict[str, dict[str, tuple[str, str | None]]] = {}

    def context(self) -> dict[str, Any]:
        """The clerk's preferences as Tryton's client sends them with every call (company, language)."""
        if self._context is None:
            self._context = dict(self.call("model.res.user.get_preferences", [True, {}], with_context=False))
        return dict(self._context)

    def fields(self, model: str) -> dict[str, tuple[str, str | None]]:
        """field name -> (type, relation model) of `model`, as Tryton describes it to this user."""
        if model not in self._fields:
            found = self.call(f"model.{model}.fields_get", [[]])
            self._fields[model] = {n: (f.get("type", ""), f.get("relation")) for n, f in found.items()}
        return self._fields[model]

    def call(self, method: str, params: list[Any], with_context: bool = True) -> Any:
        if with_context:
            params = [*params, self.context()]
        body = json.dumps({"id": next(_ids), "method": method, "params": encode(params)})
        try:
            response = self._http.post(self.url, content=body, headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise ToolError(f"the Tryton server did not answer: {type(exc).__name__}") from None
        if response.status_code == 401:
            raise ToolError("the Tryton server refused the session (401)")
        if response.status_code == 403:
            raise ToolError(f"Tryton does not allow {method} over RPC (403)")
        if response.status_code >= 400:
            raise ToolError(f"the Tryton server answered {response.status_code}: {cut(response.text)}")
        payload = json.loads(response.text, object_hook=_decode_object)
        if "error" in payload and payload["error"] is not None:
            raise refusal(payload["error"])
        return payload.get("result")

    def close(self) -> None:
        self._http.close()


def refusal(error: Any) -> ToolError:
    """The tool error for Tryton's `error` member: (exception name, args) for Tryton's own exceptions."""
    if isinstance(error, list) and len(error) == 2 and isinstance(error[0], str):
        kind, args = error
        args = args if isinstance(args, list) else [args]
        if kind == "UserWarning" and len(args) >= 2:
            name, message = str(args[0]), str(args[1])
            description = str(args[2]) if len(args) > 2 and args[2] else ""
            text = f"Tryton warning {name!r}: {message}" + (f" {description}" if description else "")
            return TrytonWarning(name, f"{text} (to proceed, call acknowledge_warning with this name)")
        if kind == "UserError" and args:
            message = str(args[0])
            description = str(args[1]) if len(args) > 1 and args[1] else ""
            return ToolError(f"Tryton refused: {message}" + (f" {description}" if description else ""))
        if kind in ("ConcurrencyException", "AccessError", "AccessButtonError", "RequiredValidationError"):
            return ToolError(f"Tryton refused: {' '.join(str(a) for a in args if a)}")
        if kind.endswith("Error") or kind.endswith("Exception"):
            return ToolError(f"Tryton refused ({kind}): {cut(' '.join(str(a) for a in args if a))}")
        # A Python exception inside Tryton: (message, traceback); the traceback stays in the log.
        return ToolError(f"Tryton failed: {cut(kind)}")
    return ToolError(f"Tryton failed: {cut(str(error))}")
