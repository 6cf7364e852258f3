#!/bin/bash
# Issue 46: experiments/check_tasks.py on CUDA for every task of the robotics domain (218), on the GPU
# machine. Each task in a child process: import, exact round trip, structural hash (duplicates), DLight's
# default schedules, build with nvcc, one run against PyTorch (CPU reference), time of one call.
#
# Needs on the GPU machine: TVM (the two parts of ../shared/device/pack-tvm.sh: call 1 carries and
# unpacks .devtvm1, this call carries .devtvm2, sourced below), the wheels of pack_gpu_wheels.sh in
# .gpuwhl (pydantic and the rest `leka` imports), CUDA's nvcc on PATH, torch (the image's). From the
# main checkout (experiments/gpu/README.md, "A device session"):
#   call 1, carry [.devtvm1]:                       bash .devtvm1/unpack.sh
#   call 2, carry [.devtvm2, .gpuwork, .gpuwhl]:    bash .gpuwork/experiments/gpu/check_tasks_cuda.sh
# A call cut off by its limit keeps its rows: run the same command again and it goes on (--resume).
# Output: $OUT/check_tasks_cuda.json (rows), $OUT/check_tasks_cuda.log (the table and the FAIL lines);
# commit the log's table as experiments/results/check_tasks_cuda.md with machine, versions and date.
# Environment: OUT (brought back; /tmp/leka-out), JOBS (tasks at once, 12: builds are CPU-bound, runs
# take the GPU briefly), IDS (comma-separated ids instead of the whole robotics pool), CALL_LIMIT (s, 585).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
OUT=${OUT:-/tmp/leka-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 LEKA_CACHE=${WORK:-/tmp/leka-gpu}/cache
if [ -f "$here/../.devtvm2/unpack.sh" ]; then . "$here/../.devtvm2/unpack.sh" || exit 3; fi
if [ ! -f /tmp/site/.leka-wheels ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "${WHEELS:-$here/../.gpuwhl}"/*.whl && touch /tmp/site/.leka-wheels || exit 3
fi
export PYTHONPATH=$here:/tmp/site:/tmp/tvmsite:${PYTHONPATH:-}
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee -a "$OUT/check_tasks_cuda.log"
python3 -c "import tvm, torch; print('torch', torch.__version__, 'tvm', tvm.__version__)" | tee -a "$OUT/check_tasks_cuda.log"
args=(--backend cuda --jobs "${JOBS:-12}" --resume --out "$OUT/check_tasks_cuda.json")
[ -n "${IDS:-}" ] && args+=(--ids "$IDS")
timeout $(( ${CALL_LIMIT:-585} - SECONDS - 15 )) python3 -m experiments.check_tasks "${args[@]}" 2>&1 \
  | grep -v -e FutureWarning -e "return cls.__new__" | tee -a "$OUT/check_tasks_cuda.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "cut off by the call's limit: run the same command again to go on" | tee -a "$OUT/check_tasks_cuda.log"
exit "$rc"
