"""The one redaction step: known secrets and secret-shaped strings go; ordinary text stays."""

import pytest

from agentrel.harness.redact import REDACTED, redact


@pytest.mark.parametrize(
    ("text", "secrets", "gone"),
    [
        ("401: invalid key SECRETVALUE-123", ["SECRETVALUE-123"], "SECRETVALUE-123"),
        ("echo: Authorization: Bearer abcdEFGH1234567890", [], "abcdEFGH1234567890"),
        ("bad key sk-ant-api03-0123456789abcdef", [], "sk-ant-api03-0123456789abcdef"),
        ("cannot reach http://alice:hunter2@127.0.0.1:9/v1", [], "hunter2"),
    ],
)
def test_secrets_and_their_shapes_are_removed(text, secrets, gone):
    out = redact(text, secrets)
    assert gone not in out and REDACTED in out


def test_ordinary_text_is_left_alone():
    text = "task itsm-cab-window: key-value pairs, 12 tickets, Bearer of bad news"
    assert redact(text) == text
