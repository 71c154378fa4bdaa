"""AgentRel's local server end to end, with llama.cpp replaced by a scripted generator (a loopback server
speaking the wire, as every provider test here): what the model is shown, what it writes, what AgentRel
records. The real weights run in `make pilot-local`; this is the part `make test` can check without them.

The generator sees only the prompt the server rendered with the model's template (its tokens are the
prompt's bytes) and answers from it, so a tool result the template dropped could not be acted on.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import types
from typing import Any, ClassVar

import pytest

from agentrel.harness.agents.chat import request_seed
from agentrel.harness.agents.openai import OpenAIAgent
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.run.audit import audit
from tests.harness.chat_templates import BLIND_TO_TOOL_RESULTS, HERMES_STYLE

TASK = "itsm-cab-window"
CALL = '<tool_call>\n{"name": "list_cab_approvals", "arguments": {"change_id": 9002}}\n</tool_call>'
ANSWER = "Not scheduled.\nREFUSAL: CHG9000002 has no CAB approval on record."


class ScriptedLlama:
    """What the server uses of llama_cpp.Llama, generating from the rendered prompt."""

    template = HERMES_STYLE.source
    seen: ClassVar[list[tuple[str, int | None]]] = []
    loaded_params: ClassVar[Any] = None

    def __init__(self, **kwargs: Any) -> None:
        # As llama_cpp.Llama: the model parameters start from the low-level defaults.
        self.model_params = ScriptedLlama.loaded_params = sys.modules[
            "llama_cpp.llama_cpp"
        ].llama_model_default_params()
        self.metadata = {
            "tokenizer.chat_template": self.template,
            "general.name": "scripted",
            "general.size_label": "0B",
        }

    def token_bos(self) -> int:
        return -1

    def token_eos(self) -> int:
        return 1

    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return b"<|im_end|>" if tokens == [1] else bytes(tokens)

    def n_ctx_train(self) -> int:
        return 32768

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(text)

    def create_completion(self, prompt: list[int], seed: int | None = None, **kw: Any) -> dict[str, Any]:
        shown = bytes(prompt).decode()
        self.seen.append((shown, seed))
        # Act on the tool result only if the template showed it: no approvals on record -> refuse.
        text = ANSWER if '"items":[]' in shown.rsplit("<tool_response>", 1)[-1] else CALL
        return {
            "id": "cmpl-1",
            "choices": [{"text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(text), "total_tokens": 0},
        }


@pytest.fixture
def server(tmp_path, monkeypatch):
    from agentrel.harness.serving import llama_server

    monkeypatch.setitem(
        sys.modules, "llama_cpp", types.SimpleNamespace(Llama=ScriptedLlama, __version__="test")
    )
    # llama.cpp's default model parameters use the extra (AMX) buffer types, as the real build's do.
    low_level = types.SimpleNamespace(
        llama_model_default_params=lambda: types.SimpleNamespace(use_extra_bufts=True)
    )
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_cpp", low_level)
    ScriptedLlama.seen = []
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF scripted weights")

    def start(template: str = HERMES_STYLE.source):
        ScriptedLlama.template = template
        args = llama_server.parse_args(["--model", str(weights), "--alias", "qwen-local", "--port", "0"])
        httpd = llama_server.make_server(llama_server.Model(args), "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1", weights

    started: list[Any] = []
    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def test_the_model_sees_the_tool_result_in_its_template_and_answers_in_text(server, sandbox, tmp_path):
    url, weights = server()
    agent = OpenAIAgent.from_env("qwen-local", {"temperature": 0.6}, env={"OPENAI_BASE_URL": url})
    agent_adapter("served", "served/<name>")(lambda rest, sampling: agent)
    outcome = audit(
        models=["served/qwen"], k=1, tasks=[TASK], concurrency=1, results=tmp_path / "r",
        sandbox=sandbox, show_progress=False, max_attempts=1,
    )  # fmt: skip
    (record,) = outcome.new
    assert record.status == "valid" and record.final_message == ANSWER and record.events == []
    assert ScriptedLlama.loaded_params.use_extra_bufts is False  # loaded without the AMX buffer types
    assert [c["tool"] for c in record.tool_calls] == ["list_cab_approvals"] and record.tool_calls[0]["ok"]
    assert record.served_model == "qwen-local"
    assert [seed for _, seed in ScriptedLlama.seen] == [
        request_seed(record.seed, 1),
        request_seed(record.seed, 2),
    ]
    second = ScriptedLlama.seen[1][0]
    assert '<tool_response>\n{"total":0,"offset":0,"returned":0,"items":[]' in second  # as the tool gave it
    server_config = json.loads((tmp_path / "r" / "manifest.json").read_text())["agents"][0]["server"]
    (listed,) = server_config["models"]
    assert (
        listed["id"] == "qwen-local"
        and listed["meta"]["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    )
    assert (
        server_config["props"]["chat_template_sha256"]
        == hashlib.sha256(HERMES_STYLE.source.encode()).hexdigest()
    )


def test_a_server_whose_template_hides_tool_results_refuses_to_start(server):
    with pytest.raises(SystemExit, match=r"does not show the model .*a tool's result"):
        server(BLIND_TO_TOOL_RESULTS.source)
