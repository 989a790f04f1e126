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
# llama.cpp is built from source, portable: a native build takes every instruction the CPU
# advertises, and a VM that advertises AMX without letting a process use it kills the server
# at its first token (seen: a general protection fault at ldtilecfg). No cached wheel: one
# built natively by an earlier install would be reused.
LOCAL  := $(VENV)/.localmodel
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
$(LOCAL): $(STAMP)
	$(BIN)/pip uninstall --quiet --yes llama-cpp-python
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(BIN)/pip install --quiet --no-cache-dir -e '.[dev,localmodel]'
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
