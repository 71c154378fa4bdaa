"""llama-cpp-python's OpenAI-compatible server, with workarounds for two crashes: real tool sets, AMX CPUs.

Under `chatml-function-calling` the server turns a tool's JSON schema into a llama.cpp grammar when the
model calls that tool. A string bounded by a large `maxLength` (every free-text argument of AgentRel's
tools is, at 10,000) becomes a rule repeated that many times, past llama.cpp's repetition limit: llama.cpp
prints "failed to parse grammar" and the whole server process dies, so the client sees a connection
closed without a response (tests/harness/test_real_server_cases.py keeps that case). This drops large
string bounds from the grammar only: the tools still check every argument's length themselves.

Usage: <venv>/bin/python tests/smoke/serve_llama.py <the arguments of python -m llama_cpp.server>
"""

from __future__ import annotations

import json
from typing import Any

import llama_cpp.llama_cpp
from llama_cpp import llama_grammar

GRAMMAR_MAX_LENGTH = 64  # bounds up to this expand to grammars llama.cpp accepts


def relax(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: relax(v)
            for k, v in schema.items()
            if not (k == "maxLength" and isinstance(v, int) and v > GRAMMAR_MAX_LENGTH)
        }
    if isinstance(schema, list):
        return [relax(v) for v in schema]
    return schema


_from_json_schema = llama_grammar.LlamaGrammar.from_json_schema.__func__  # type: ignore[attr-defined]


def from_json_schema(cls: type, json_schema: str, verbose: bool = True) -> Any:
    return _from_json_schema(cls, json.dumps(relax(json.loads(json_schema))), verbose)


llama_grammar.LlamaGrammar.from_json_schema = classmethod(from_json_schema)  # type: ignore[assignment]

# llama-cpp-python 0.3.36's default build crashes (SIGSEGV in ggml_backend_amx_mul_mat) at the first decode
# on CPUs with AMX unless the model is loaded without the extra (AMX) buffer types. `Llama(...)` silently
# ignores unknown keyword arguments, so the default model parameters every Llama starts from are changed.
_default_model_params = llama_cpp.llama_cpp.llama_model_default_params


def _model_params_without_extra_bufts() -> Any:
    params = _default_model_params()
    params.use_extra_bufts = False
    return params


llama_cpp.llama_cpp.llama_model_default_params = _model_params_without_extra_bufts

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
