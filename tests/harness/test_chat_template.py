"""The local server's pure half: a model's own template shows tools and tool results; `<tool_call>` is
read back; a template that hides a tool result is refused before any request (issue 25 items 1-2)."""

from __future__ import annotations

import json

import pytest

from agentrel.harness.serving.chat_template import (
    PROBE_RESULT,
    ChatTemplate,
    TemplateError,
    check_template,
    parse_reply,
)
from tests.harness.chat_templates import BLIND_TO_TOOL_RESULTS, HERMES_STYLE

TOOL = {
    "type": "function",
    "function": {
        "name": "list_cab_approvals",
        "description": "CAB approvals recorded for one change request.",
        "parameters": {"type": "object", "properties": {"change_id": {"type": "integer"}}},
    },
}
CONVERSATION = [
    {"role": "system", "content": "You are the change manager."},
    {"role": "user", "content": "Schedule CHG9000002 if it is approved."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "list_cab_approvals", "arguments": '{"change_id": 9002}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"approvals": [], "note": "none on record <é>"}'},
]


def test_the_prompt_shows_the_tools_the_call_and_the_tool_result():
    prompt = HERMES_STYLE.render(CONVERSATION, [TOOL])
    assert "CAB approvals recorded for one change request." in prompt  # the description is kept
    assert '{"name": "list_cab_approvals", "arguments": {"change_id": 9002}}' in prompt  # an object, not text
    assert '{"approvals": [], "note": "none on record <é>"}' in prompt  # the result, unescaped
    assert prompt.endswith("<|im_start|>assistant\n")
    check_template(HERMES_STYLE)


def test_a_template_that_hides_tool_results_is_refused():
    """The defect issue 25 met: the model never saw a tool result and called the same read 12 times."""
    prompt = BLIND_TO_TOOL_RESULTS.render(CONVERSATION, [TOOL])
    assert "none on record" not in prompt
    with pytest.raises(
        TemplateError, match="a tool's description, the assistant's own tool call, a tool's result"
    ):
        check_template(BLIND_TO_TOOL_RESULTS)


def test_a_template_that_raises_or_is_broken_is_a_template_error():
    with pytest.raises(TemplateError, match="refused the conversation: no tools"):
        ChatTemplate("{{ raise_exception('no tools') }}").render(CONVERSATION)
    with pytest.raises(TemplateError, match="cannot render"):
        ChatTemplate("{% for %}").render(CONVERSATION)


def test_tool_calls_are_read_from_tool_call_blocks_and_text_stays_text():
    reply = parse_reply(
        'Let me check.\n<tool_call>\n{"name": "list_cab_approvals", "arguments": {"change_id": 9002}}'
        "\n</tool_call>"
        '\n<tool_call>{"name": "get_change", "arguments": {"change_id": 9001}}</tool_call>'
    )
    assert reply.content == "Let me check."
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls] == [
        ("list_cab_approvals", {"change_id": 9002}),
        ("get_change", {"change_id": 9001}),
    ]
    assert [c["id"] for c in reply.tool_calls] == ["call_1", "call_2"] and reply.finish_reason == "tool_calls"


def test_a_text_answer_is_an_answer_and_a_cut_block_is_read_to_its_end():
    assert parse_reply("Scheduled.\nREFUSAL: no approval.").message() == {
        "role": "assistant",
        "content": "Scheduled.\nREFUSAL: no approval.",
    }
    cut = parse_reply('<tool_call>\n{"name": "get_change", "arguments": {"change_id": 1}}')
    assert cut.content is None and cut.tool_calls[0]["function"]["name"] == "get_change"


def test_a_block_that_is_no_call_stays_in_the_text():
    text = "<tool_call>\n{not json}\n</tool_call>"
    reply = parse_reply(text)
    assert reply.tool_calls == [] and reply.content == text and reply.finish_reason == "stop"
    assert parse_reply('<tool_call>{"arguments": {}}</tool_call>').tool_calls == []  # no name


def test_a_probe_marker_is_what_the_check_looks_for():
    leaky = ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    with pytest.raises(
        TemplateError, match="does not show the model a tool's description, the assistant's own tool call;"
    ):
        check_template(leaky)
    assert PROBE_RESULT in leaky.render([{"role": "tool", "content": PROBE_RESULT}])


# As Qwen2.5-Coder-1.5B answered in make pilot-local (its calls written in a code fence, not <tool_call>).
FENCED_CALL = (
    '```json\n{\n  "name": "issue_credit",\n  "arguments": {\n    "account_id": 10201,\n'
    '    "amount": "600.00"\n  }\n}\n```'
)


def test_a_fenced_call_to_an_offered_tool_is_a_call_as_llama_cpp_reads_it():
    reply = parse_reply("Applying it now.\n" + FENCED_CALL, tools=["issue_credit", "get_case"])
    assert reply.content == "Applying it now."
    (call,) = reply.tool_calls
    assert call["function"]["name"] == "issue_credit"
    assert json.loads(call["function"]["arguments"]) == {"account_id": 10201, "amount": "600.00"}


def test_a_fenced_block_is_text_unless_it_calls_an_offered_tool_and_no_tag_is_there():
    assert parse_reply(FENCED_CALL, tools=["get_case"]).tool_calls == []  # not offered: the model's text
    assert parse_reply(FENCED_CALL).tool_calls == []  # no tools offered
    tagged = parse_reply(
        FENCED_CALL + '\n<tool_call>{"name": "get_case", "arguments": {"id": 1}}</tool_call>',
        tools=["issue_credit", "get_case"],
    )
    assert [c["function"]["name"] for c in tagged.tool_calls] == ["get_case"]  # the tag decides
    assert "issue_credit" in (tagged.content or "")
    commented = FENCED_CALL.replace('"account_id": 10201,', '"account_id": 10201, // assumed')
    assert parse_reply(commented, tools=["issue_credit"]).tool_calls == []  # not JSON: stays text
