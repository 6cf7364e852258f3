# Two commands on a fresh machine: `make demo` (install + optimise a small real task), `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow test-boards lint bench clean opencl llm-local boards

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: an unpinned resolve would pull the multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,claude]'
	"$$($(BIN)/python -c 'from leka.arms.claude_code import find_cli; print(find_cli())')" --version  # the Claude Code arm's CLI
	touch $(STAMP)

# TVM's OpenCL runtime as a plugin of the wheel (+ PoCL, an OpenCL device on the CPU; apt as root):
# `make opencl TVM_SRC=~/tvm` builds it from your TVM checkout
TVM_SRC ?= ../shared/tvm-opencl
opencl: setup
	$(BIN)/leka opencl build --tvm-src $(TVM_SRC)

# the emulated aarch64 board (docs/boards.md): qemu-user + the cross g++ (apt, as root) and the board's
# sysroot (Debian arm64 packages + the aarch64 apache-tvm wheel), cached in .leka-cache/boards/
boards: setup
	$(BIN)/leka board setup aarch64

demo: setup
	$(BIN)/leka demo

test: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -ra --durations=60

test-slow: setup
	$(BIN)/python -m pytest -q -ra -m slow

# end-to-end runs on the emulated aarch64 board (after `make boards`; CI runs it after `make test`)
test-boards: setup
	$(BIN)/python -m pytest -q -ra -m board --durations=10

# the evaluator's cost per evaluation on the llvm subset (prints a table; see experiments/README.md)
bench: setup
	$(BIN)/python -m experiments.bench_evaluator

# a local small model for --policy llm: llama-cpp-python's server + the GGUF, cached (leka/llm/README.md)
llm-local: setup
	$(BIN)/python -m leka.llm.local setup

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf runs .leka-cache experiments/out
