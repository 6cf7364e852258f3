"""The standard arms of the study by name (only the level table imported: the config validates against
this table)."""

from __future__ import annotations

from typing import Any

from leka.core.levels import LEVEL_SPECS, LiveTable

RECIPES = ("leka", "flat", "oneshot", "metaschedule", "claude_code")
# recipe name -> arm function: filled by leka.exp.arms (which imports this module, not the reverse)
ARMS: dict[str, Any] = {}


def _presets() -> dict[str, tuple[str, list[str], str]]:
    return {
        "leka": ("leka", [], "LEKA, all three levels, profile routing, tree search, deferred acceptance"),
        # per level of the table: the run without it (l0_off, l1_off, ..., a registered level's too)
        **{f"{lv.lower()}_off": ("leka", [f"run.layers=[{','.join(o for o in LEVEL_SPECS if o != lv)}]"],
                                 f"LEKA without the {spec.noun}") for lv, spec in LEVEL_SPECS.items()},
        "routing_random": ("leka", ["run.routing=random"], "levels chosen at random (seeded)"),
        "routing_round_robin": ("leka", ["run.routing=round_robin"], "levels in turn"),
        "routing_fixed_L1": ("leka", ["run.routing=fixed:L1"], "always the schedule level"),
        "greedy": ("leka", ["run.search=greedy"], "only the current best node is expanded"),
        "no_defer": ("leka", ["run.defer_followups=0"], "deferred acceptance off: a slower child is pruned at once"),
        "ms_tool": ("leka", ["tuner.enabled=true"], "LEKA with MetaSchedule as a tool of the L1 agent (the hottest "
                    "kernel, once, after the schedule move; warm-started; its time charged to the budget)"),
        "flat": ("flat", [], "one agent edits any level, no router (no layering); the run's policy's agent "
                 "(policy llm: one LLM agent with the same model, facts, repairs and budget)"),
        "flat_rule": ("flat", ["run.policy=rules"], "the flat arm built from the rule agents, whatever the grid's policy"),
        "oneshot": ("oneshot", [], "one LLM call writes the candidate"),
        "metaschedule": ("metaschedule", [], "MetaSchedule with the same wall clock; its best at the end"),
        "claude_code": ("claude_code", [], "a general coding agent with the same model and wall clock"),
    }


# name -> (recipe, LEKA run overrides, one-line description): the standard arms of the study, made from
# the level table each time it is read (a level registered later has its `<level>_off` arm)
PRESETS: LiveTable = LiveTable(_presets)
