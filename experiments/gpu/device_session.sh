#!/bin/bash
# One device session on the H200 machine (experiments/gpu/README.md). Run from the copy of this tree
# on the GPU machine, after TVM's part 1 is unpacked (../shared/device/README.md); part 2 is sourced
# here. Every step logs to $WORK/out/STEP.log with a timeout, a failing step does not stop the ones
# after it (except `smoke`, the gate of call2), and after each step $WORK/out is packed into
# $OUT/<call>.tar.gz, so what is done comes back even when the call is cut off.
#
#   bash experiments/gpu/device_session.sh call2   setup; tuning started on GPU 1 (in its own session,
#                                                  it outlives the call); GPU 0: smoke, GPU tests with
#                                                  the 2-minute run beside them, the 23 subset runs
#   bash experiments/gpu/device_session.sh call3   wait for / stop the tuning, then the table on every GPU
#   bash experiments/gpu/device_session.sh opencl  the OpenCL plugin on NVIDIA's OpenCL, bench_opencl (OCL_MS=N: with
#                                                  the MetaSchedule-N column, tuned before by `opencl_tune`)
#   bash experiments/gpu/device_session.sh opencl_tune  MetaSchedule-$TRIALS for the OpenCL tasks, one GPU per share
#   bash experiments/gpu/device_session.sh sandbox issue 26: the sandbox's layers on CUDA (sandbox_diag.py),
#                                                  the GPU tests, A/A of both protocols (bench_sandbox.py)
#   bash experiments/gpu/device_session.sh aa      issue 27: A/A of the CUDA and OpenCL time steps (aa_gpu.py:
#                                                  sandboxed, in-process, in-process with the old warm-up) beside
#                                                  the OpenCL plugin's build and the fast-math GPU tests
#   bash experiments/gpu/device_session.sh equal_run / equal_judge  issue 30: bench_equal_clock.py run (LEKA and
#                                                  MetaSchedule EQ_BUDGET each, EQ_JOBS at once) / judge and render
#   bash experiments/gpu/device_session.sh STEP    one step: setup smoke tests run2m runs tune table
#
# With one GPU, call2 does not tune; call3 tunes first (nothing else on the GPU), then times.
# Environment: OUT (brought back), WORK (run folders, lasts while the machine stays up), BUDGET (per
# subset run, 60s), JOBS (runs at once, 12), TRIALS (MetaSchedule, 16), TUNE_JOBS (8), CALL_LIMIT (s).
set -uo pipefail
what=${1:?call2, call3, opencl, sandbox, aa or a step}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
OUT=${OUT:-/tmp/leka-out}
WORK=${WORK:-/tmp/leka-gpu}
LOGS=$WORK/out
mkdir -p "$OUT" "$LOGS"
export PYTHONUNBUFFERED=1 LEKA_CACHE=$WORK/cache PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
BUDGET=${BUDGET:-60s}
JOBS=${JOBS:-12}
TRIALS=${TRIALS:-16}
TUNE_JOBS=${TUNE_JOBS:-8}
LIMIT=${CALL_LIMIT:-585}
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
# quick timing: evaluations queue for their GPU (gpu_lock), so each holds it briefly
FAST=(--set evaluator.timing_budget_s=0.5 --set evaluator.max_pairs=6 --set evaluator.sample_s=0.01
      --set evaluator.timeout_s=200 --set baseline.cache_dir=$WORK/cache)

left() { echo $(( LIMIT - SECONDS - 20 )); }  # seconds this call has left, the packing kept

pack() {  # everything so far, small files only, into the one archive of this call
  local tmp="$WORK/.pack.$BASHPID.tgz"  # steps run side by side pack side by side
  tar -czf "$tmp" -C "$LOGS" . 2>/dev/null && mv -f "$tmp" "$OUT/$what.tar.gz"
}

step() {  # step NAME TIMEOUT_S CMD...: logged, timed out, never fatal
  local name=$1 limit=$2; shift 2
  [ "$limit" -gt 5 ] || { echo "$name: skipped (no time left)" | tee -a "$OUT/steps.log"; return 9; }
  local t0=$SECONDS
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc in $((SECONDS - t0))s (limit ${limit}s) at $(date -u +%H:%M:%S)" | tee -a "$OUT/steps.log"
  pack
  return $rc
}



setup() {
  if [ -f "$here/../.devtvm2/unpack.sh" ]; then . "$here/../.devtvm2/unpack.sh" || return 3; fi
  if [ ! -f /tmp/site/.leka-wheels ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      "${WHEELS:-$here/../.gpuwhl}"/*.whl && touch /tmp/site/.leka-wheels || return 3
  fi
  export PYTHONPATH=$here:/tmp/site:/tmp/tvmsite:${PYTHONPATH:-}
}

check_env() {
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvcc --version | tail -2
  python3 -c "import leka, leka.cli, langgraph, pydantic, tenacity, xgboost, tvm, torch; from leka.backends import get_backend
print('leka from', leka.__file__); print('torch', torch.__version__, 'tvm', tvm.__version__)
print('cuda backend missing:', get_backend('cuda').unavailable())"
}

s_smoke() { step smoke 120 env CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0 python3 -m leka.cli bench eval l1_mish --backend cuda --set baseline.cache_dir=$WORK/cache; }
s_tests() { step gpu_tests "${1:-260}" env CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0 python3 -m pytest tests/test_gpu.py -m "gpu or not slow" -q -p no:cacheprovider -rA; }
s_run2m() {
  rm -rf "$WORK/run2m"
  step leka_run_2m "${1:-220}" env CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0 python3 -m leka.cli run --backend cuda --task l2_conv3x3_bn_relu --budget 2m \
    --out "$WORK/run2m" "${FAST[@]}"
  local d; d=$(ls -d "$WORK"/run2m/*/ 2>/dev/null | head -1)
  [ -n "$d" ] && mkdir -p "$LOGS/run2m" && cp "$d"/summary.json "$d"/report.md "$d"/config.yaml "$LOGS/run2m/" 2>/dev/null
  pack
}
s_runs() {
  step runs "${1:-$(left)}" env CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0 python3 experiments/gpu/cuda_subset.py runs --out "$WORK/subset" --budget "$BUDGET" \
    --jobs "$JOBS" "${FAST[@]}"
  mkdir -p "$LOGS/subset"
  cp -r "$WORK/subset/runs.json" "$WORK/subset/best" "$WORK/subset/logs" "$LOGS/subset/" 2>/dev/null
  pack
}
tune_start() {  # in a session of its own: it outlives this call (the machine stays up ~30 s after it)
  local g=$1
  CUDA_VISIBLE_DEVICES=$g OMP_NUM_THREADS=2 TVM_NUM_THREADS=2 setsid python3 experiments/gpu/cuda_subset.py tune \
    --out "$WORK/subset" --trials "$TRIALS" --jobs "$TUNE_JOBS" --cache-dir "$WORK/cache" > "$WORK/tune.log" 2>&1 &
  echo $! > "$WORK/tune.pid"
  echo "tuning started on GPU $g (pid $!, $TRIALS trials, $TUNE_JOBS at once) at $(date -u +%H:%M:%S)" | tee -a "$OUT/steps.log"
}
tune_collect() {
  mkdir -p "$LOGS/tune"
  cp "$WORK/tune.log" "$LOGS/tune/" 2>/dev/null
  cp "$WORK"/subset/tune/*.log "$LOGS/tune/" 2>/dev/null
  find "$WORK/cache/ms" -name DONE -exec sh -c 'echo "$1: $(cat "$1")"' _ {} \; > "$LOGS/tune/done.txt" 2>/dev/null
  echo "tuned so far: $(wc -l < "$LOGS/tune/done.txt") of 23" | tee -a "$OUT/steps.log"
  pack
}
tune_running() { [ -f "$WORK/tune.pid" ] && kill -0 "$(cat "$WORK/tune.pid")" 2>/dev/null; }
s_table() {
  local gpus=${1:-$NGPU}
  step table "${2:-$(left)}" python3 experiments/gpu/cuda_subset.py table --out "$WORK/subset" --trials "$TRIALS" \
    --jobs "$JOBS" --gpus "$gpus" --no-tune --cache-dir "$WORK/cache" --budget-note "$BUDGET (rule policy)"
  python3 experiments/gpu/cuda_subset.py render --out "$WORK/subset" > /dev/null 2>&1
  mkdir -p "$LOGS/subset"
  cp "$WORK"/subset/table.md "$WORK"/subset/table.json "$WORK"/subset/timings.jsonl "$WORK"/subset/meta.json \
    "$WORK"/subset/runs.json "$LOGS/subset/" 2>/dev/null
  cp "$WORK/subset/table.md" "$OUT/" 2>/dev/null
  pack
}

setup > "$LOGS/setup.log" 2>&1 || { cat "$LOGS/setup.log"; pack; echo "setup failed"; exit 3; }
echo "== $what on $(hostname), $NGPU GPU(s), $(date -u +%H:%M:%S)" | tee -a "$OUT/steps.log"
case $what in
  call2)
    check_env > "$LOGS/env.log" 2>&1; cat "$LOGS/env.log"
    [ "$NGPU" -ge 2 ] && ! tune_running && tune_start 1
    s_smoke || { tail -30 "$LOGS/smoke.log"; [ "${GATE:-1}" = 1 ] && { tune_collect; exit 4; }; }
    tail -22 "$LOGS/smoke.log"
    s_run2m 220 & r2=$!
    s_tests 260; wait $r2
    tail -6 "$LOGS/gpu_tests.log"; grep -E "best|nodes|stop|rc=" "$LOGS/leka_run_2m.log" | tail -12
    s_runs "$(left)"
    tail -26 "$LOGS/runs.log"
    tune_collect
    ;;
  call3)
    if [ "$NGPU" -ge 2 ]; then
      w=${TUNE_WAIT:-120}
      while tune_running && [ "$w" -gt 0 ]; do sleep 5; w=$((w - 5)); done
      if tune_running; then  # what is tuned by now makes the MS column; the rest is marked untuned
        kill -- -"$(cat "$WORK/tune.pid")" 2>/dev/null; sleep 2
        echo "tuning stopped at $(date -u +%H:%M:%S) to free GPU 1 for timing" | tee -a "$OUT/steps.log"
      fi
    else
      step tune "${TUNE_LIMIT:-300}" python3 experiments/gpu/cuda_subset.py tune --out "$WORK/subset" --trials "$TRIALS" \
        --jobs "$TUNE_JOBS" --cache-dir "$WORK/cache"
    fi
    tune_collect
    s_table "$NGPU" "$(left)"
    tail -45 "$LOGS/table.log"
    ;;
  opencl|opencl_tune)
    export OCL_ICD_VENDORS=$WORK/icd CPATH=/usr/local/cuda/include${CPATH:+:$CPATH}
    mkdir -p "$OCL_ICD_VENDORS"; echo libnvidia-opencl.so.1 > "$OCL_ICD_VENDORS/nvidia.icd"
    # no package registry there: the CL headers come with CUDA, the TVM sources travel (.oclsrc in the copied tree,
    # a copy of ../shared/tvm-opencl), the ICD is the driver's
    export LEKA_TVM_OPENCL_SRC=${LEKA_TVM_OPENCL_SRC:-$here/.oclsrc}
    step opencl_build 150 python3 -m leka.cli opencl build --no-install-deps
    # MetaSchedule-N: opencl_tune tunes (cached in $WORK/cache, which outlives a call while the machine stays
    # up), a following `opencl` with OCL_MS=N reuses it and adds the column
    if [ "$what" = opencl_tune ]; then
      ms=(--tune-only --ms-trials "$TRIALS")
    elif [ -n "${OCL_MS:-}" ]; then
      ms=(--ms-trials "$OCL_MS")
    else
      ms=()
    fi
    # the subset's 23 OpenCL tasks dealt over the GPUs, one bench process and one GPU lock each
    mapfile -t ids < <(python3 -c "from benchmark.subsets import load_subset; print('\n'.join(load_subset('subset69', 'opencl')))")
    pids=()
    for ((g = 0; g < NGPU; g++)); do
      part=$(for ((i = g; i < ${#ids[@]}; i += NGPU)); do printf '%s,' "${ids[i]}"; done)
      step "${what}_g$g" "$(left)" env CUDA_VISIBLE_DEVICES=$g LEKA_GPU_LOCK=/tmp/leka-gpu-lock-$g python3 experiments/bench_opencl.py \
        --budget "${OPENCL_BUDGET:-15s}" --tasks "$part" --out "$WORK/opencl/g$g" --cache-dir "$WORK/cache" "${ms[@]}" & pids+=($!)
    done
    wait "${pids[@]}"
    if [ "$what" = opencl_tune ]; then
      tail -3 "$LOGS"/opencl_tune_g*.log; find "$WORK/cache/ms" -name DONE | wc -l; pack; exit 0
    fi
    mkdir -p "$LOGS/opencl"
    for ((g = 0; g < NGPU; g++)); do cp "$(ls -t "$WORK"/opencl/g$g/*.json | head -1)" "$LOGS/opencl/g$g.json" 2>/dev/null; done
    python3 experiments/bench_opencl.py --table "$(ls "$LOGS"/opencl/g*.json | paste -sd,)" --budget "${OPENCL_BUDGET:-15s}" \
      --device local --label "NVIDIA OpenCL on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $NGPU GPU(s)" \
      > "$LOGS/opencl/table.md" 2>&1
    cp "$LOGS/opencl/table.md" "$OUT/opencl_table.md"; pack
    cat "$LOGS/opencl/table.md"
    tail -n 5 "$LOGS"/opencl_g*.log
    ;;
  sandbox)  # issue 26 on the GPU: the layers the worker trips on, the GPU tests, A/A of the two protocols
    check_env > "$LOGS/env.log" 2>&1; cat "$LOGS/env.log"
    (ldconfig -p | grep -i seccomp; python3 -c "import pyseccomp; print('pyseccomp', pyseccomp.__file__)") \
      >> "$LOGS/env.log" 2>&1; tail -3 "$LOGS/env.log"
    g=(env CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0)
    step sandbox_diag "${DIAG_LIMIT:-150}" "${g[@]}" python3 experiments/gpu/sandbox_diag.py --backend cuda --task l1_mish \
      ${DIAG_VARIANTS:+--variants $DIAG_VARIANTS} --stop-on-pass
    cat "$LOGS/sandbox_diag.log" | grep '^{' | cut -c1-700
    step gpu_tests "${TESTS_LIMIT:-240}" "${g[@]}" python3 -m pytest tests/test_gpu.py -m gpu -q -p no:cacheprovider -rA
    grep -E "passed|failed|Error|error|assert" "$LOGS/gpu_tests.log" | tail -30
    step aa_cuda "$(left)" "${g[@]}" python3 experiments/bench_sandbox.py --skip-a --backend cuda --aa-rounds 1 \
      ${AA_TASKS:+--b-tasks $AA_TASKS} ${AA_ARMS:+--arms $AA_ARMS} --json "$LOGS/aa_cuda.json"
    tail -32 "$LOGS/aa_cuda.log"
    ;;
  aa)  # issue 27: A/A of the CUDA and OpenCL time steps, both protocols, one GPU (aa_gpu.py)
    export OCL_ICD_VENDORS=$WORK/icd CPATH=/usr/local/cuda/include${CPATH:+:$CPATH}
    mkdir -p "$OCL_ICD_VENDORS"; echo libnvidia-opencl.so.1 > "$OCL_ICD_VENDORS/nvidia.icd"
    export LEKA_TVM_OPENCL_SRC=${LEKA_TVM_OPENCL_SRC:-$here/.oclsrc}
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    # side by side: the versions, the OpenCL plugin (its jobs wait for opencl.ready), the fast-math tests
    # (they queue for the GPU like the A/A's evaluations), the A/A itself
    check_env > "$LOGS/env.log" 2>&1 &
    (step opencl_build 150 python3 -m leka.cli opencl build --no-install-deps && touch "$WORK/opencl.ready") &
    # AA_TESTS_K='' runs every GPU test (issue 26's `pytest -m gpu`) instead of the fast-math ones
    k=${AA_TESTS_K-rmsnorm or fast_math}
    step gpu_tests "${AA_TESTS_LIMIT:-150}" python3 -m pytest tests/test_gpu.py ${k:+-k "$k"} -m "gpu or not slow" -q \
      -p no:cacheprovider -rA &
    step aa "$(left)" python3 experiments/gpu/aa_gpu.py run --out "$WORK/aa" --rows "$OUT/aa_rows.jsonl" \
      --shards "${AA_SHARDS:-6}" --deadline-s "$(( $(left) - 15 ))" --ready "opencl=$WORK/opencl.ready" \
      --groups "${AA_GROUPS:-cuda:after,opencl:after,opencl:before,opencl:before0@8,cuda:before}" ${AA_TASKS:+--tasks $AA_TASKS}
    wait
    python3 experiments/gpu/aa_gpu.py render --rows "$OUT/aa_rows.jsonl" --md "$OUT/aa_table.md" > /dev/null 2>&1
    cp "$OUT/aa_rows.jsonl" "$OUT/aa_table.md" "$LOGS/" 2>/dev/null; pack
    cat "$OUT/steps.log"; tail -3 "$LOGS/gpu_tests.log"; tail -40 "$OUT/aa_table.md"
    ;;
  gpu_all)  # every GPU-marked test of every file (issues 26, 28, 29), the device roof, the CUDA-graph baseline
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    # the Claude Code CLI, where an earlier call left it (its binary travels in parts: README)
    [ -x /tmp/claude ] && export LEKA_CLAUDE_BIN=/tmp/claude
    check_env > "$LOGS/env.log" 2>&1
    step gpu_all "${TESTS_LIMIT:-420}" python3 -m pytest tests/test_gpu.py tests/test_gpu_arms.py tests/test_engines.py \
      tests/test_roof.py -m gpu -q -p no:cacheprovider -rA
    grep -E "^(PASSED|FAILED|SKIPPED|ERROR)|passed|failed" "$LOGS/gpu_all.log" | tail -40
    step roof "$(left)" python3 -m leka.cli bench roof --backend cuda --refresh --markdown
    cat "$LOGS/roof.log" | tail -25
    step cg "$(left)" python3 -m leka.cli bench eval l2_conv3x3_bn_relu --backend cuda --baseline torch_compile_cg \
      --set baseline.cache_dir=$WORK/cache
    tail -12 "$LOGS/cg.log"
    ;;
  arms_cuda)  # issue 28 on the GPU: the Claude Code / one-shot CUDA tests, then the LLM smoke grid's cuda twin
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    [ -x /tmp/claude ] && export LEKA_CLAUDE_BIN=/tmp/claude
    step gpu_arms "${TESTS_LIMIT:-300}" python3 -m pytest tests/test_gpu_arms.py -m gpu -q -p no:cacheprovider -rA
    grep -E "^(PASSED|FAILED|SKIPPED|ERROR)|passed|failed|^E " "$LOGS/gpu_arms.log" | tail -30
    python3 tests/test_llm_grid.py "$WORK/smoke_llm.json" cuda > "$LOGS/smoke_script.log" 2>&1
    python3 tests/fake_llm_server.py --port 8765 --script "$WORK/smoke_llm.json" > "$LOGS/fake_server.log" 2>&1 & srv=$!
    sleep 2
    rm -rf "$WORK/smoke_llm_cuda"
    step smoke_llm_cuda "$(left)" python3 -m leka.cli exp run experiments/configs/smoke_llm_cuda.yaml --workers 2 \
      --out "$WORK/smoke_llm_cuda"
    kill "$srv" 2>/dev/null
    mkdir -p "$LOGS/smoke_llm_cuda"
    cp "$WORK"/smoke_llm_cuda/report.md "$WORK"/smoke_llm_cuda/report.html "$WORK"/smoke_llm_cuda/results.sqlite \
      "$LOGS/smoke_llm_cuda/" 2>/dev/null
    cp "$LOGS/smoke_llm_cuda/report.md" "$LOGS/smoke_llm_cuda/report.html" "$OUT/" 2>/dev/null
    tail -25 "$LOGS/smoke_llm_cuda.log"
    ;;
  engines_run)  # issues 27 and 29: the shared-GPU runs of one task (shared_gpu.py), the device roof, then
    # LEKA's answers for the CUDA engine table (bench_vs_engines.py run, ENG_JOBS at once)
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    check_env > "$LOGS/env.log" 2>&1
    step shared "${SHARED_LIMIT:-260}" python3 experiments/gpu/shared_gpu.py --out "$WORK/shared" --runs "${SHARED_RUNS:-12}" \
      --budget "${SHARED_BUDGET:-60s}" "${FAST[@]}"
    cp "$WORK/shared/rows.jsonl" "$LOGS/shared_rows.jsonl" 2>/dev/null; cat "$LOGS/shared.log" | head -60
    step roof 60 python3 -m leka.cli bench roof --backend cuda --markdown
    step engines_run "$(left)" python3 experiments/bench_vs_engines.py run --backend cuda --out "$WORK/engines" \
      --budget "${ENG_BUDGET:-90s}" --arms "${ENG_ARMS:-leka}" --jobs "${ENG_JOBS:-12}" --minutes "$(( ($(left) - 150) / 60 ))" "${FAST[@]}"
    cp "$WORK/engines/runs.jsonl" "$LOGS/engines_runs.jsonl" 2>/dev/null; tail -25 "$LOGS/engines_run.log"
    ;;
  engines_judge)  # issue 29: each answer against DLight, torch eager, torch.compile (plain, CUDA graphs), TensorRT
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    J=(--set evaluator.timing_budget_s=1.0 --set evaluator.max_pairs=10 --set evaluator.sample_s=0.01
       --set evaluator.noise_floor_budget_s=0.5 --set evaluator.timeout_s=400 --set baseline.cache_dir=$WORK/cache)
    step engines_judge "$(left)" python3 experiments/bench_vs_engines.py judge --out "$WORK/engines" --jobs "${ENG_JOBS:-6}" \
      --baselines "${ENG_BASELINES:-untuned,torch,torch_compile,torch_compile_cg,tensorrt,tuned}" --trials "${TRIALS}" \
      --minutes "$(( ($(left) - 60) / 60 ))" "${J[@]}"
    python3 experiments/bench_vs_engines.py render --out "$WORK/engines" --md "$LOGS/engines_table.md" > /dev/null 2>&1
    cp "$WORK/engines/runs.jsonl" "$WORK/engines/judged.jsonl" "$WORK"/engines/judge_meta-*.json "$LOGS/" 2>/dev/null
    cp "$LOGS/engines_table.md" "$OUT/" 2>/dev/null
    tail -8 "$LOGS/engines_judge.log"; head -40 "$LOGS/engines_table.md"
    ;;
  equal_run)  # issue 30: LEKA and MetaSchedule, EQ_BUDGET each per task, EQ_JOBS tasks at once (bench_equal_clock.py)
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    check_env > "$LOGS/env.log" 2>&1
    step equal_run "$(left)" python3 experiments/bench_equal_clock.py run --backend cuda --out "$WORK/equal" \
      --budget "${EQ_BUDGET:-2m}" --jobs "${EQ_JOBS:-12}" --minutes "$(( ($(left) - 200) / 60 ))" "${FAST[@]}"
    cp "$WORK/equal/runs.jsonl" "$WORK/equal/tunes.jsonl" "$LOGS/" 2>/dev/null; tail -30 "$LOGS/equal_run.log"
    ;;
  equal_judge)  # issue 30: each LEKA answer against MetaSchedule's database at every minute cut
    export CUDA_VISIBLE_DEVICES=0 LEKA_GPU_LOCK=/tmp/leka-gpu-lock-0
    J=(--set evaluator.timing_budget_s=1.0 --set evaluator.max_pairs=10 --set evaluator.sample_s=0.01
       --set evaluator.timeout_s=300 --set baseline.cache_dir=$WORK/cache)
    step equal_judge "$(left)" python3 experiments/bench_equal_clock.py judge --out "$WORK/equal" --jobs "${EQ_JOBS:-6}" \
      --minutes "$(( ($(left) - 60) / 60 ))" "${J[@]}"
    python3 experiments/bench_equal_clock.py render --out "$WORK/equal" --md "$LOGS/equal_table.md" > /dev/null 2>&1
    cp "$WORK/equal/runs.jsonl" "$WORK/equal/tunes.jsonl" "$WORK/equal/judged.jsonl" "$WORK"/equal/judge_meta-*.json \
      "$LOGS/" 2>/dev/null
    cp "$LOGS/equal_table.md" "$OUT/" 2>/dev/null
    tail -8 "$LOGS/equal_judge.log"; head -40 "$LOGS/equal_table.md"
    ;;
  round4)  # issues 43/45/46/47: check_tasks over the 218 CUDA instances (resumable, rows kept in $WORK) beside
           # the GPU-marked tests of the judge, boards, one-shot and failure classes, then CUDA through RPC
    check_env > "$LOGS/env.log" 2>&1; cat "$LOGS/env.log"
    # an earlier session's passing rows (experiments/results/check_tasks_cuda.json, copied into the tree) are kept
    [ -f "$WORK/check_tasks_cuda.json" ] || cp "$here/experiments/results/check_tasks_cuda.json" "$WORK/" 2>/dev/null
    ( timeout "$(( $(left) - 10 ))" python3 -m experiments.check_tasks --backend cuda --jobs "${CT_JOBS:-8}" --resume \
        --out "$WORK/check_tasks_cuda.json" > "$LOGS/check_tasks_cuda.log" 2>&1
      echo "check_tasks_cuda: rc=$? at $(date -u +%H:%M:%S)" >> "$OUT/steps.log"
      cp "$WORK/check_tasks_cuda.json" "$OUT/" 2>/dev/null; pack ) & ct=$!
    step rpc_test 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py -k cuda_through_rpc
    tail -5 "$LOGS/rpc_test.log"
    if [ ! -f "$WORK/cuda_rpc.md" ]; then
      step cuda_rpc "$(( $(left) / 2 ))" python3 experiments/gpu/cuda_rpc.py --out "$WORK/cuda_rpc.md" \
        --json "$WORK/cuda_rpc.json" --runs "$WORK/rpc_runs" --budget "${RPC_BUDGET:-45}" --max-evals 4
      cp "$WORK/cuda_rpc.md" "$WORK/cuda_rpc.json" "$LOGS/" 2>/dev/null; cp "$WORK/cuda_rpc.md" "$OUT/" 2>/dev/null
      cat "$WORK/cuda_rpc.md" 2>/dev/null
    fi
    if [ ! -f "$WORK/round4_tests_done" ]; then
      step gpu_tests "$(( $(left) - 30 ))" python3 -m pytest -m gpu -q -p no:cacheprovider \
        tests/test_gpu.py tests/test_failure_taxonomy.py tests/test_bench_oneshot.py tests/test_baseline_isolation.py \
        tests/test_gpu_lowering.py && touch "$WORK/round4_tests_done"
      tail -15 "$LOGS/gpu_tests.log"
    fi
    wait $ct; cp "$WORK/check_tasks_cuda.json" "$LOGS/" 2>/dev/null; tail -25 "$LOGS/check_tasks_cuda.log"
    ;;
  setup) check_env ;;
  smoke) s_smoke ;;
  tests) s_tests ;;
  run2m) s_run2m ;;
  runs) s_runs ;;
  tune) step tune "$(left)" python3 experiments/gpu/cuda_subset.py tune --out "$WORK/subset" --trials "$TRIALS" \
          --jobs "$TUNE_JOBS" --cache-dir "$WORK/cache" ;;
  table) s_table ;;
  *) echo "unknown: $what"; exit 2 ;;
esac
pack
echo "== $what done in ${SECONDS}s"
