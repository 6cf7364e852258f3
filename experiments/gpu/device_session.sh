#!/bin/bash
# One device session on the H200 (see experiments/gpu/README.md). Run from the copy of this tree on
# the GPU machine, after TVM's two parts are unpacked (../shared/device/README.md):
#   bash experiments/gpu/device_session.sh call2   smoke test, GPU tests, the 2-minute run, the 23 runs
#   bash experiments/gpu/device_session.sh call3   the table (MetaSchedule, torch eager / compile)
# Logs and results go to $OUT (what the device tool brings back); run folders to $WORK.
set -uo pipefail
what=${1:?call2 or call3}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
OUT=${OUT:-/tmp/leka-out}
WORK=${WORK:-/tmp/leka-gpu}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 LEKA_CACHE=$WORK/cache
if true; then  # cheap (seconds); a wheel added since the last call is then installed too
  wh=${WHEELS:-$here/../.gpuwhl}
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$wh"/*.whl || exit 3
fi
export PYTHONPATH=$here:/tmp/site:${PYTHONPATH:-}
budget=${BUDGET:-40s}
jobs=${JOBS:-8}
# quick timing on the shared GPU: evaluations queue for it (gpu_lock), so each holds it briefly
FAST=(--set evaluator.timing_budget_s=1.0 --set evaluator.max_pairs=8 --set evaluator.sample_s=0.01
      --set evaluator.timeout_s=200 --set baseline.cache_dir=$WORK/cache)
if [ "$what" = call2 ]; then
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import leka.cli, langgraph, pydantic, tenacity, xgboost, tvm, torch; from leka.backends import get_backend; print('imports ok; torch', torch.__version__, 'tvm', tvm.__version__, 'cuda missing:', get_backend('cuda').unavailable())"
    timeout 150 python3 -m leka.cli bench eval l1_mish --backend cuda --set baseline.cache_dir=$WORK/cache
  } > "$OUT/smoke.log" 2>&1
  rc=$?
  echo "smoke rc=$rc"; tail -30 "$OUT/smoke.log"
  [ $rc = 0 ] || exit 4
  (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 timeout 240 python3 -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?" >> "$OUT/gpu_tests.log") &
  tests=$!
  timeout 200 python3 -m leka.cli run --backend cuda --task l2_conv3x3_bn_relu --budget 2m --out $WORK/run2m \
     "${FAST[@]}" > "$OUT/leka_run_2m.log" 2>&1
  echo "leka run rc=$?" | tee -a "$OUT/leka_run_2m.log"
  wait $tests
  tail -8 "$OUT/gpu_tests.log"; tail -30 "$OUT/leka_run_2m.log"
  d=$(ls -d $WORK/run2m/* 2>/dev/null | head -1)
  tar -czf "$OUT/run2m.tar.gz" -C "$d" summary.json report.md config.yaml 2>/dev/null
  [ -n "$d" ] && [ -f "$d/summary.json" ] || { echo "the 2-minute run left no summary: stopping here"; exit 5; }
  left=$(( ${CALL_LIMIT:-585} - SECONDS - 15 ))  # what this call has left, the copy-out kept
  timeout ${RUNS_TIMEOUT:-$left} python3 experiments/gpu/cuda_subset.py runs --out $WORK/subset --budget "$budget" --jobs "$jobs" \
    "${FAST[@]}" > "$OUT/runs.log" 2>&1
  echo "runs rc=$?"
  tail -30 "$OUT/runs.log"
  cp $WORK/subset/runs.json "$OUT/" 2>/dev/null
  tar -czf "$OUT/subset_best.tar.gz" -C $WORK/subset best runs.json logs 2>/dev/null
else
  timeout ${TABLE_TIMEOUT:-480} python3 experiments/gpu/cuda_subset.py table --out $WORK/subset --trials "${TRIALS:-16}" \
    --jobs "$jobs" --cache-dir $WORK/cache --budget-note "$budget" > "$OUT/table.log" 2>&1
  echo "table rc=$?"
  python3 experiments/gpu/cuda_subset.py render --out $WORK/subset >/dev/null 2>&1
  cp $WORK/subset/table.md $WORK/subset/timings.jsonl $WORK/subset/meta.json "$OUT/" 2>/dev/null
  tail -40 "$OUT/table.log"
fi
