"""AgentRel's own local model server: a model's chat template and tool-call parsing over llama-cpp-python.

`chat_template` is pure (jinja2 only) and tested in `make test`; `llama_server` needs llama-cpp-python and
runs in its own virtual environment (`make pilot-local`). Nothing else in AgentRel imports this package.
"""
