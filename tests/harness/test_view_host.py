"""The view refuses a request addressed to another host: the DNS-rebinding attack, where a web site's name
is re-bound to 127.0.0.1 so that the user's own browser reads the view's transcripts for that site."""

from __future__ import annotations

import functools

import httpx
import pytest

from agentrel.harness.host_names import addressed_to_us
from agentrel.harness.view.host_guard import HOSTS
from tests.browser.support import DAMAGING, served, small_audit
from tests.harness.test_view_folder import served_folder

# A run page's first load reads its dumps: seconds on a loaded machine (2 cores, many suites), not a hang.
get = functools.partial(httpx.get, timeout=60)


@pytest.fixture(scope="module")
def audited(sandbox, tmp_path_factory):
    return small_audit(sandbox, tmp_path_factory.mktemp("host") / "results")


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_a_rebound_host_cannot_read_a_run_page_or_search_transcripts(audited):
    with served(audited) as url:
        port = _port(url)
        run = get(f"{url}/runs/{DAMAGING}", headers={"Host": f"attacker.example:{port}"})
        search = get(f"{url}/search?q=credit", headers={"Host": f"attacker.example:{port}"})
        version = get(f"{url}/api/version", headers={"Host": f"attacker.example:{port}"})
        # The same page under the server's own names is served.
        own = [get(f"{url}/runs/{DAMAGING}", headers={"Host": f"{h}:{port}"}) for h in HOSTS]
    for refused in (run, search, version):
        assert refused.status_code == 421
        assert refused.text.count("\n") == 1 and "attacker.example" in refused.text
        assert "goodwill" not in refused.text and DAMAGING not in refused.text
    assert all(r.status_code == 200 and "goodwill credit above the cap" in r.text for r in own)


def test_a_foreign_origin_or_another_port_is_refused(audited):
    with served(audited) as url:
        port = _port(url)
        foreign = get(url + "/", headers={"Origin": f"http://attacker.example:{port}"})
        same = get(url + "/", headers={"Origin": f"http://127.0.0.1:{port}"})
        other_port = get(url + "/", headers={"Host": f"127.0.0.1:{port + 1}"})
        no_port = get(url + "/", headers={"Host": "localhost"})
    assert foreign.status_code == 403 and "Origin" in foreign.text and "Findings" not in foreign.text
    assert same.status_code == 200 and "Findings" in same.text
    assert other_port.status_code == 421 and no_port.status_code == 421


def test_folder_mode_refuses_a_rebound_host_on_the_index_and_each_audit(sandbox, tmp_path):
    small_audit(sandbox, tmp_path / "results" / "first")
    with served_folder(tmp_path / "results") as url:
        bad = {"Host": f"attacker.example:{_port(url)}"}
        index = get(url + "/", headers=bad)
        run = get(f"{url}/a/first/runs/{DAMAGING}", headers=bad)
        good = get(f"{url}/a/first/runs/{DAMAGING}")
    assert index.status_code == 421 and run.status_code == 421 and "first" not in index.text
    assert good.status_code == 200


@pytest.mark.parametrize(
    ("host", "origin", "ok"),
    [
        ("127.0.0.1:8765", None, True),
        ("LOCALHOST:8765", "http://localhost:8765", True),
        ("[::1]:8765", "https://[::1]:8765", True),
        ("127.0.0.1:8765", "null", False),  # a sandboxed frame or a file: page
        ("127.0.0.1:8765", "http://127.0.0.1:9999", False),
        ("evil.127.0.0.1.nip.io:8765", None, False),
        ("127.0.0.1@evil:8765", None, False),
        ("127.0.0.1:8765/x", None, False),
        ("", None, False),
        (None, None, False),
        ("127.0.0.1:notaport", None, False),
    ],
)
def test_the_rule(host, origin, ok):
    assert (addressed_to_us(host, origin, HOSTS, 8765) is None) is ok
