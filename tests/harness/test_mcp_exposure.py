"""Who may reach `agentrel mcp serve` over HTTP: loopback unless opted in with a token, the Host/Origin
check always on, and one MCP session per run.

Every socket here is on 127.0.0.1: a non-loopback host is only ever refused, which happens before anything
is bound.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agentrel.harness.errors import UsageError
from agentrel.harness.mcp.http import allowed_hosts, is_loopback
from agentrel.harness.mcp.server import ServeOptions
from agentrel.sandbox.databases import RUN_PREFIX
from tests.harness import test_mcp
from tests.harness.test_mcp import (
    CALLS,
    REPO,
    check_cleanup,
    check_session,
    drive,
    serve_args,
    server_env,
    spawn,
    wait_for_log,
)

expected = test_mcp.expected  # the in-process verdict of CALLS, a fixture

TOKEN = "t0ken-for-tests-only"
# Would move change A out of its window: had it reached the tools, the verdict would not be the expected one.
MOVE = {"id": 9001, "planned_start": "2026-03-04T22:00:00Z", "planned_end": "2026-03-04T23:30:00Z"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "intruder", "version": "0"},
    },
}
MOVE_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "update_change_request", "arguments": MOVE},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "10.0.0.1", "192.168.1.5", "example.com", "localhost.evil"]
)
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)
    with pytest.raises(UsageError, match="--host"):
        ServeOptions(transport="http", host=host)
    ServeOptions(transport="http", host=host, allow_remote=True, token=TOKEN)  # the opt-in
    ServeOptions(transport="stdio", host=host)  # stdio listens on nothing


def test_allowed_hosts_are_the_bound_address_and_the_extra_ones():
    assert allowed_hosts("10.0.0.1", ["agents.lan"]) == ["10.0.0.1", "agents.lan"]
    assert allowed_hosts("::1") == ["[::1]", "127.0.0.1", "localhost"]
    every = allowed_hosts("0.0.0.0")
    assert "0.0.0.0" not in every and {"127.0.0.1", "localhost", "[::1]"} <= set(every)


def test_token_is_not_in_the_options_repr():
    assert TOKEN not in repr(ServeOptions(transport="http", token=TOKEN))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--host", "0.0.0.0"],
            "--host '0.0.0.0' is not loopback, so anyone who reaches it could act on the run:"
            " use --host 127.0.0.1, or add --allow-remote with --token (or AGENTREL_MCP_TOKEN)",
        ),
        (["--host", "10.1.2.3", "--token", TOKEN], "--host '10.1.2.3' is not loopback"),
        (
            ["--host", "0.0.0.0", "--allow-remote"],
            "--allow-remote needs a bearer token: pass --token or set AGENTREL_MCP_TOKEN",
        ),
    ],
)
def test_exposed_host_refuses_to_start(sandbox, args, message):
    before = set(sandbox.dbs.names(RUN_PREFIX))
    env = {k: v for k, v in {**os.environ, **server_env()}.items() if k != "AGENTREL_MCP_TOKEN"}
    result = subprocess.run(
        [sys.executable, *serve_args("--transport", "http", "--port", "0", *args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()  # no "run database", no "listening on"
    assert line.startswith(f"agentrel: error: {message}")
    assert TOKEN not in result.stderr + result.stdout
    assert set(sandbox.dbs.names(RUN_PREFIX)) == before


@contextmanager
def http_server(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """A served task on 127.0.0.1; yields its URL, then stops it with SIGTERM, which must exit 0."""
    proc = spawn(tmp_path, "--transport", "http", "--port", "0", *extra, env=env)
    try:
        yield wait_for_log(tmp_path / "stderr.log", r"listening on (\S+)", proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, (tmp_path / "stderr.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()


def client_session(url: str, token: str | None = None) -> tuple[Any, dict[str, str]]:
    """The official client's transport with optional bearer headers, and the session id it was given."""
    seen: dict[str, str] = {}

    async def remember(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            seen["id"] = response.headers["mcp-session-id"]

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = httpx2.AsyncClient(headers=headers, event_hooks={"response": [remember]})
    return streamable_http_client(url, http_client=client), seen


def post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=30)


def test_bearer_token_guards_every_request(sandbox, expected, tmp_path):
    verdict_file = tmp_path / "verdict.json"
    before = set(sandbox.dbs.names(RUN_PREFIX))
    env = {"AGENTREL_MCP_TOKEN": TOKEN}
    with http_server(tmp_path, "--allow-remote", "--verdict-out", str(verdict_file), env=env) as url:

        async def main() -> tuple[list[str], list[Any], list[httpx.Response]]:
            transport, seen = client_session(url, TOKEN)
            async with transport as (read, write), ClientSession(read, write) as session:
                names, results = await drive(session)
                # With the open session's id, a mutating call still needs the token.
                bad = [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"]
                refused = [
                    post(
                        url,
                        MOVE_CALL,
                        **{"mcp-session-id": seen["id"]},
                        **({"Authorization": a} if a else {}),
                    )
                    for a in bad
                ]
            return names, results, refused

        names, results, refused = anyio.run(main)
    assert [r.status_code for r in refused] == [401] * 5
    assert all(r.headers["www-authenticate"] == "Bearer" for r in refused)
    check_session(names, results, expected)
    assert json.loads(verdict_file.read_text()) == expected["verdict"]
    log = (tmp_path / "stderr.log").read_text()
    assert TOKEN not in log + verdict_file.read_text()
    check_cleanup(sandbox, log, before)


def test_foreign_origin_and_host_are_refused_even_with_the_token(tmp_path):
    with http_server(tmp_path, "--token", TOKEN) as url:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post(url, INITIALIZE, **auth, Origin="http://evil.example").status_code == 403
        assert post(url, INITIALIZE, **auth, Host="evil.example").status_code == 421
        assert post(url, INITIALIZE, Origin="http://evil.example").status_code == 401
    assert TOKEN not in (tmp_path / "stderr.log").read_text()


def test_a_second_session_is_refused_and_the_first_keeps_the_run(sandbox, expected, tmp_path):
    """The first client is the SDK's default `Client` ("auto"): its sessionless 2026-07-28 probe is refused,
    so it falls back to a session, and that session is the run's only one."""
    verdict_file = tmp_path / "verdict.json"
    before = set(sandbox.dbs.names(RUN_PREFIX))
    with http_server(tmp_path, "--verdict-out", str(verdict_file)) as url:

        async def second_client() -> None:
            transport, _ = client_session(url)
            async with transport as (read, write), ClientSession(read, write) as session:
                await session.initialize()

        async def main() -> tuple[list[str], list[Any], bool, list[httpx.Response]]:
            async with Client(url) as first:
                names = [t.name for t in (await first.list_tools()).tools]
                results = [await first.call_tool(name, args) for name, args in CALLS]
                with pytest.raises(BaseExceptionGroup) as caught:
                    await second_client()
                assert caught.group_contains(MCPError, match="its MCP session is taken", depth=None)
                refused = [
                    post(url, INITIALIZE),
                    post(url, MOVE_CALL),
                    post(url, MOVE_CALL, **{"mcp-session-id": "0" * 32}),
                    post(url, MOVE_CALL, **{"mcp-protocol-version": "2026-07-28"}),  # the sessionless era
                ]
                again = await first.call_tool(*CALLS[0])
            refused.append(post(url, INITIALIZE))  # the first session has ended: still the same run
            return names, results, again.is_error, refused

        names, results, again_failed, refused = anyio.run(main)
    assert [r.status_code for r in refused] == [409, 409, 404, 400, 409]
    assert not again_failed
    check_session(names, results, expected)
    assert json.loads(verdict_file.read_text()) == expected["verdict"]
    log = (tmp_path / "stderr.log").read_text()
    assert f"finishing after {len(CALLS) + 1} tool call(s)" in log
    check_cleanup(sandbox, log, before)
