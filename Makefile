# Two commands on a fresh machine: `make demo` (install + optimise a small real task), `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow lint bench clean llm-local

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: an unpinned resolve would pull the multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/leka demo

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -ra

test-slow: setup
	$(BIN)/python -m pytest -q -ra -m slow

# a local small model for --policy llm: llama-cpp-python's server + the GGUF, cached (leka/llm/README.md)
llm-local: setup
	$(BIN)/python -m leka.llm.local setup

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf runs .leka-cache experiments/out
