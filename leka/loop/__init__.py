"""The loop: a LangGraph `StateGraph` of plain node functions (docs/DESIGN.md, "Orchestration").

    init -> sense -> route -> {l0, l1, l2} -> evaluate -> select -> sense ... -> finish

| module | what |
| --- | --- |
| `state` | `RunState`: the small checkpointed state (ids, counters, short strings) |
| `context` | `RunContext`: the live objects of a run (tree, evaluator, agents, router), given to every node as LangGraph's run context |
| `nodes` | the node functions `init`, `sense`, `route`, `propose`, `evaluate`, `select`, `finish` |
| `select` | `choose_next`: best-first node selection with exploration and noise bands; the `select` node reopens every node in a widened round (`run.widen_rounds`) when all are exhausted and an agent `widens` |
| `routers` | `make_router`: the policy's router (it implements `Router` itself) |
| `graph` | `build_graph` (edges from the level table), `run_graph` with SQLite checkpoints |
"""
