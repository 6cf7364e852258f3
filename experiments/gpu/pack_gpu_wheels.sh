#!/bin/bash
# Packs the Python packages `leka` needs on the H200 GPU machine besides TVM (which travels in two
# parts of its own: ../shared/device/pack-tvm.sh) as py3.12 manylinux wheels into the ignored
# folder .gpuwhl/ (well under the device tool's 64 MiB per call). The GPU image already has torch,
# numpy, typer, rich, jinja2, networkx, pyyaml, psutil, cloudpickle, httpx, xxhash, ...; these are the
# ones it lacks (langgraph and its dependencies, pydantic, tenacity, xgboost for MetaSchedule's cost
# model). Versions: the ones this project pins (pyproject.toml) and their resolved dependencies.
# On the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpuwhl/*.whl
#   export PYTHONPATH=/tmp/site:$PYTHONPATH
# Run from the project root.
set -euo pipefail
out=${1:-.gpuwhl}
PY=${PYTHON:-python3}
PKGS=(
  pydantic==2.14.4 pydantic-core==2.50.5 typing-inspection==0.4.5 annotated-types==0.8.0
  langgraph==1.2.24 langgraph-checkpoint==4.3.2 langgraph-checkpoint-sqlite==3.1.2 langgraph-prebuilt==1.1.3
  langgraph-sdk==0.4.14 langchain-core==1.8.3 langchain-protocol==0.0.20 langsmith==0.15.1
  jsonpatch==1.48 jsonpointer==3.12 ormsgpack==1.13.1 orjson==3.13.0 requests-toolbelt==1.0.0
  uuid-utils==0.19.0 zstandard==0.25.0 aiosqlite==0.22.1 sqlite-vec==0.1.9 tenacity==9.2.1
  xgboost-cpu==3.2.0 sniffio==1.3.1 websockets==17.4 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 distro==1.9.0 certifi==2026.10.19.post1
  typing-extensions==4.16.0 pyseccomp==0.1.2
  anthropic==2.14.0 openai==3.57.0 jiter==0.19.0 docstring-parser==0.18.0 opentelemetry-api==1.45.2 anyio==4.16.0
)
mkdir -p "$out"
for p in "${PKGS[@]}"; do
  name=${p%%==*}
  ls "$out" | grep -qi "^${name//-/_}-${p##*==}-" && continue
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d "$out" "$p"
done
du -sh "$out"
