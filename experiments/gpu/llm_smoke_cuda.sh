#!/usr/bin/env bash
# Issue 47's cuda cell: the LLM smoke grid (experiments/configs/smoke_llm_local_cuda.yaml) against the
# local model on the GPU machine, which has no registry and takes 64 MiB a call. The model (491 MB) and
# the server travel in slices, one device call each, while the machine stays warm (~30 s between calls):
#
#   bash experiments/gpu/llm_smoke_cuda.sh pack       # here: .gpullm/{whl,m0..m8} (model slices, server wheels)
#   call 1, carry [.devtvm1]:                         bash .devtvm1/unpack.sh
#   call 2, carry [.devtvm2, .gpuwhl, .gpullm/whl]:   bash experiments/gpu/llm_smoke_cuda.sh setup
#   calls 3-11, carry [.gpullm/mK]:                   bash experiments/gpu/llm_smoke_cuda.sh part .gpullm/mK
#   calls 12-18, carry [.gpullm/cK] (the Claude Code CLI the claude_code arm runs, 356 MB):
#                                                     bash experiments/gpu/llm_smoke_cuda.sh part .gpullm/cK
#   call 19 (again with --resume after a cut):        bash experiments/gpu/llm_smoke_cuda.sh grid
#
# The server is llama-cpp-python's (the wheel `make llm-local` built here: ctypes bindings, no Python ABI)
# with the same model file, checked against the sha256 pinned in leka/llm/local.py; the grid's report
# and rows land in $OUT.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=/tmp/llm/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
CLI=/tmp/llm/claude
GRID=/tmp/llmgrid

pack() {
  local whl model
  whl=$(find ~/.cache/pip -name 'llama_cpp_python-0.3.36-*.whl' | head -1)
  model=$(cd "$here" && .venv/bin/python -c 'from leka.llm.local import model_path; print(model_path())')
  [ -n "$whl" ] && [ -f "$model" ] || { echo "run make llm-local first"; return 2; }
  rm -rf "$here/.gpullm" && mkdir -p "$here/.gpullm/whl"
  cp "$whl" "$here/.gpullm/whl/"
  "$here/.venv/bin/pip" download -q -d "$here/.gpullm/whl" --python-version 3.12 --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 "uvicorn>=0.22.0" "fastapi>=0.100.0" \
    "pydantic-settings>=2.0.1" "sse-starlette>=1.6.1" "starlette-context>=0.3.6,<0.4" PyYAML "diskcache>=5.6.1"
  local i=0
  split -b 53M -d -a 1 "$model" "$here/.gpullm/part."
  for f in "$here"/.gpullm/part.*; do mkdir -p "$here/.gpullm/m$i" && mv "$f" "$here/.gpullm/m$i/"; i=$((i + 1)); done
  local cli
  cli=$(cd "$here" && .venv/bin/python -c 'from leka.arms.claude_code import find_cli; print(find_cli())')
  split -b 53M -d -a 1 "$cli" "$here/.gpullm/cli."
  i=0
  for f in "$here"/.gpullm/cli.*; do mkdir -p "$here/.gpullm/c$i" && mv "$f" "$here/.gpullm/c$i/"; i=$((i + 1)); done
  sha256sum "$cli" | cut -d' ' -f1 > "$here/.gpullm/whl/claude.sha256"
  du -sh "$here"/.gpullm/*
}

env_up() {
  . "$here/.devtvm2/unpack.sh" >/dev/null || return 3
  export PYTHONPATH=$here:/tmp/site:/tmp/tvmsite
}

setup() {
  env_up || return 3
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$here"/.gpuwhl/*.whl || return 3
  # the server's own wheels apart, so its pydantic does not shadow the one leka was tested with
  # (numpy and jinja2 come with the machine's PyTorch)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/llmsite \
    "$here"/.gpullm/whl/*.whl || return 3
  mkdir -p /tmp/llm && rm -f "$MODEL" "$CLI"
  python3 -c "import tvm, leka.cli; print('tvm', tvm.__version__)" || return 3
  PYTHONPATH=/tmp/llmsite python3 -c "import llama_cpp, llama_cpp.server.app; print('llama_cpp', llama_cpp.__version__)"
}

part() {
  if [ -n "$(ls "$1"/cli.* 2>/dev/null)" ]; then cat "$1"/cli.* >> "$CLI" && chmod +x "$CLI" && ls -l "$CLI"
  else cat "$1"/part.* >> "$MODEL" && ls -l "$MODEL"; fi
}

grid() {
  env_up || return 3
  local want size
  want=$(python3 -c 'from leka.llm.local import MODEL_SHA256 as s; print(s)')
  [ "$(sha256sum "$MODEL" | cut -d' ' -f1)" = "$want" ] || { echo "model incomplete: $(stat -c %s "$MODEL") bytes"; return 4; }
  if ! curl -s -o /dev/null http://127.0.0.1:8080/v1/models; then
    # a server of its own session: it outlives a call cut by the limit, and the next call's --resume uses it
    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=/tmp/llmsite setsid nohup python3 -m llama_cpp.server --model "$MODEL" \
      --host 127.0.0.1 --port 8080 --n_ctx 8192 --n_threads "${LLM_THREADS:-8}" --n_threads_batch "${LLM_THREADS:-8}" \
      --model_alias qwen2.5-coder-0.5b > /tmp/llm/server.log 2>&1 < /dev/null &
    for _ in $(seq 60); do curl -s -o /dev/null http://127.0.0.1:8080/v1/models && break; sleep 1; done
  fi
  if [ "$(sha256sum "$CLI" 2>/dev/null | cut -d' ' -f1)" = "$(cat "$here/.gpullm/whl/claude.sha256" 2>/dev/null)" ]; then
    export LEKA_CLAUDE_BIN=$CLI
  else echo "no Claude Code CLI here: the claude_code cell fails on that"; fi
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep 'Model name'
  local args=(--out "$GRID")
  [ -f "$GRID/results.sqlite" ] && args=(--resume "$GRID")
  timeout "${GRID_LIMIT:-540}" python3 -m leka.cli exp run "$here/experiments/configs/smoke_llm_local_cuda.yaml" \
    --workers 1 "${args[@]}"
  echo "grid rc=$?"
  mkdir -p "$OUT/grid"
  cp "$GRID"/{report.md,report.html,results.sqlite,jobs.json,experiment.yaml} "$OUT/grid/" 2>/dev/null
  tail -30 /tmp/llm/server.log > "$OUT/grid/server_tail.log"
  for d in "$GRID"/runs/*/; do [ -f "$d/stream.jsonl" ] && tail -c 4000 "$d/stream.jsonl" > "$OUT/grid/$(basename "$d")_stream_tail.jsonl"; done
  ls "$GRID" "$GRID"/runs 2>/dev/null | head -30
}

"$@"
