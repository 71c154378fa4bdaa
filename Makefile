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

# The view in headless Debian Chromium through Playwright (apt-get install chromium; pip install
# playwright; no browser download). Kept out of `make test` by the --ignore in pyproject's addopts.
.PHONY: test-browser
test-browser: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[browser]'
	$(BIN)/python -m pytest tests/browser

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict dsl analysis
	$(BIN)/mypy sandbox harness

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
