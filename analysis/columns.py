"""The column dictionary of every flat file AgentRel writes: what each column holds, in words.

One source for `agentrel export KIND --describe` and the generated documentation page
(docs/reference/output-files.md, scripts/gen_docs.py). tests/analysis/test_columns.py keeps each
dictionary equal to the columns the writer actually emits, so a new column cannot go undocumented.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    meaning: str


@dataclass(frozen=True)
class FileSpec:
    name: str
    what: str
    command: str
    columns: tuple[Column, ...]


_CELL = (
    Column("model", "the agent's name as given to `--model` (e.g. `openai/gpt-4o`, `reference/stochastic`)"),
    Column("agent_kind", "`model` (a real model), `reference` or `scripted` (built-in agents, not models)"),
    Column("task", "the task id"),
    Column(
        "condition",
        "`clean`, `noisy`, `adversarial`, `lying-success`, a condition file's name, or `fault:<id>`",
    ),
)

DAMAGES = FileSpec(
    name="damages.csv",
    what="One row per damage event of a valid run: which rule of which spec fired on which row, how bad, "
    "and its price. Invalid runs contribute no row. The frequency denominator, the valid runs of each "
    "cell, is `valid_runs_in_cell` in `runs.csv` (and `n` in `cells.csv`).",
    command="agentrel export damages RESULTS -o damages.csv",
    columns=(
        Column("run_id", "the run's id, as in `runs.jsonl` and the view's `/runs/<run id>` page"),
        Column("model", _CELL[0].meaning),
        Column("task", _CELL[2].meaning),
        Column("condition", _CELL[3].meaning),
        Column(
            "run_index", "the run's index in its cell, 1..k; with the task and condition it fixes the seed"
        ),
        Column(
            "rule", "the label of the damage rule that fired (or the spec's fallback, `unexplained mutation`)"
        ),
        Column("severity", "the rule's severity: `low`, `medium`, `high` or `critical`"),
        Column(
            "irreversibility",
            "`substrate` (the world changed and cannot be changed back), `governance` (undoable, but the "
            "out-of-authority act stands) or `reversible`",
        ),
        Column("table", "the table of the damaged row (for an aggregate rule: the table its changes are in)"),
        Column(
            "key",
            "the damaged row's primary key values as a JSON array (an aggregate event: its group-by "
            "values); the same values one per column in key_1..key_3",
        ),
        Column(
            "dollars",
            "the event's price in `currency`, exact to the cent, as the rule's price expression computed "
            "it from the row; empty when `priced` is `unpriced` (never 0.00 for a missing price)",
        ),
        Column("protocol_hash", "the protocol the run was recorded under (`protocol.json`)"),
        Column("agent_kind", _CELL[1].meaning),
        Column(
            "spec",
            "the spec whose rule fired: the task's id, or `injection:<goal>` when the agent did what an "
            "injected payload asked",
        ),
        Column(
            "priced",
            "`priced` (the rule has a price: `dollars` is its value, possibly 0.00), `unpriced` (the rule "
            "names no price: `dollars` is empty) or `unknown` (the spec changed since the audit, or the "
            "input is an outcomes CSV)",
        ),
        Column("currency", "the currency of `dollars`: `USD`"),
        Column(
            "op",
            "what happened to the row: `insert`, `delete` or `update` (an aggregate rule: its operation, "
            "`any` possible); empty in records that did not say",
        ),
        Column("changed_columns", "for an update, the columns it changed, joined with `;`"),
        Column("rows", "changes the event stands for: 1 for a row, the group's size for an aggregate rule"),
        Column("aggregate", "`True` when an aggregate (`group by ... having`) rule produced the event"),
        Column(
            "key_columns",
            "the names of the key's columns, joined with `;` (from the audit's dumps; `group by` for an "
            "aggregate event)",
        ),
        Column("key_1", "the first key value"),
        Column("key_2", "the second key value, for a composite key"),
        Column("key_3", "the third key value, for a wider key or group"),
    ),
)

RUNS = FileSpec(
    name="runs.csv",
    what="One row per run, valid or invalid, with its cell's counts: the frequency denominator of the "
    "damage events. An invalid run (the provider or the harness broke it) has no outcome: it is never "
    "counted as safe and enters no rate.",
    command="agentrel export runs RESULTS -o runs.csv",
    columns=(
        Column("run_id", "the run's id, as in `damages.csv` and `runs.jsonl`"),
        _CELL[0],
        _CELL[1],
        _CELL[2],
        _CELL[3],
        Column("run_index", "the run's index in its cell, 1..k"),
        Column("status", "`valid`, or the invalid status (`provider_invalid`, `harness_invalid`, ...)"),
        Column("outcome", "`PASS`, `FAIL_SAFE` or `FAIL_DAMAGE`; empty for an invalid run"),
        Column(
            "damaging", "`True` when the run damaged (an agent error after a change counts); empty if invalid"
        ),
        Column(
            "dollars",
            "the run's priced damage, exact; empty if invalid. Read it with `unpriced_events`: 0.00 beside "
            "unpriced events is not a $0 loss",
        ),
        Column("currency", "`USD`"),
        Column("events", "the run's rows in `damages.csv`"),
        Column(
            "unpriced_events",
            "the run's damage events with no price (the rule names none, or its spec cannot be read and the "
            "event recorded 0.00): damage of unknown size, never $0; empty if invalid",
        ),
        Column("cost_usd", "the run's token cost in US dollars; empty when unknown or the run is invalid"),
        Column(
            "cost_source",
            "`measured` (AgentRel read the provider's usage: a model adapter or the model proxy) or "
            "`reported` (only the agent program's own usage file said it); empty when the cost is unknown",
        ),
        Column("valid_runs_in_cell", "valid runs of the run's cell: the denominator of its damage frequency"),
        Column("invalid_runs_in_cell", "invalid runs of the run's cell, counted beside it"),
    ),
)

CELLS = FileSpec(
    name="cells.csv",
    what="One row per cell (agent, task, condition): counts, the damage rate with its exact interval, "
    "dollars and the repeats needed. `n` (valid runs) and `invalid` stand beside every rate; a cell whose "
    "runs were all invalid has n = 0 and every rate empty. Rates are fractions in [0, 1]; money is in US "
    "dollars. Every estimate is written with six decimals, the exact `dollars_total` with two.",
    command="agentrel export cells RESULTS -o cells.csv (also written by analyze into analysis/)",
    columns=(
        *_CELL,
        Column("n", "valid runs: the denominator of every rate in the row"),
        Column("invalid", "runs whose decisive attempt was invalid (provider, harness, unwitnessed fault)"),
        Column("x", "damaging valid runs"),
        Column("p_hat", "damage rate x / n"),
        Column("ci_low", "exact (Clopper–Pearson) 95% lower bound of the damage rate"),
        Column("ci_high", "exact (Clopper–Pearson) 95% upper bound of the damage rate"),
        Column("p_invalid_safe", "the damage rate had every invalid run been safe: x / (n + invalid)"),
        Column(
            "p_invalid_damaging",
            "the damage rate had every invalid run been damaging: (x + invalid) / (n + invalid)",
        ),
        Column("demonstrably_stochastic", "`True` when the cell both damaged and did not: 0 < x < n"),
        Column("always_damage", "`True` when every valid run damaged: x = n > 0"),
        Column("passed", "valid runs that met the task's requirements with no damage"),
        Column("errored", "valid runs that ended in an agent error"),
        Column("mutated", "valid runs that changed the database at all (allowed or not)"),
        Column("invalid_provider", "invalid runs: the provider failed past its retries"),
        Column("invalid_harness", "invalid runs: the harness failed"),
        Column("invalid_other", "invalid runs of any other status"),
        Column("retried", "attempts superseded by a later attempt of the same run"),
        Column("dollars_total", "summed priced damage over the valid runs, exact"),
        Column("expected_dollars_per_run", "mean priced damage per valid run (expected loss per run)"),
        Column("dollars_ci_low", "bootstrap 95% lower bound of the expected loss per run"),
        Column("dollars_ci_high", "bootstrap 95% upper bound of the expected loss per run"),
        Column("lgd_mean", "loss given damage: mean dollars over the damaging runs"),
        Column("lgd_max", "loss given damage: the largest"),
        Column("lgd_p50", "loss given damage: the median"),
        Column("lgd_p90", "loss given damage: the 90th percentile"),
        Column("k_point", "repeats needed to see this cell's damage with 95% probability, at p = p_hat"),
        Column(
            "k_conservative",
            "repeats needed at the one-sided 95% lower bound of p: the number to budget when p is uncertain",
        ),
        Column("cost_usd_mean", "mean token cost per valid run in US dollars (0 for built-in agents)"),
    ),
)

AXES = FileSpec(
    name="axes.csv",
    what="One row per operational axis and (agent, condition): the estimate, its interval and the method "
    "of that interval, with the runs it rests on. An undefined estimate is empty.",
    command="agentrel export axes RESULTS -o axes.csv (also written by analyze into analysis/)",
    columns=(
        _CELL[0],
        _CELL[1],
        _CELL[3],
        Column("axis", "the measure: `completion`, `cost_usd`, `efficiency`, `reliability`, `pass_k`, ..."),
        Column(
            "axis_group",
            "the axis it belongs to: completion, cost, efficiency, reliability, recovery, safety",
        ),
        Column("estimate", "the value (a fraction in [0, 1] for rates, US dollars for cost)"),
        Column("ci_low", "lower bound of the 95% interval (method in `ci_method`)"),
        Column("ci_high", "upper bound of the 95% interval"),
        Column("n", "runs the estimate rests on"),
        Column("invalid", "invalid runs of the agent and condition, never in the estimate"),
        Column("unknown", "runs whose value on this axis cannot be known (e.g. not exposed)"),
        Column("k", "for pass^k: the k it is computed at"),
        Column("not_exposed", "for safety: runs that never met their injected payload"),
        Column("baseline", "for recovery: the condition it is compared with"),
        Column("ci_method", "how the interval was computed: Clopper–Pearson, Wilson, Student t, bootstrap"),
    ),
)


def _measures(prefix: str, what: str) -> tuple[Column, ...]:
    return (
        Column(f"{prefix}expected_loss", f"expected annual {what}, US dollars to the cent"),
        Column(f"{prefix}std", "its standard deviation"),
        Column(f"{prefix}var_99", "value at risk at 99%"),
        Column(f"{prefix}var_995", "value at risk at 99.5%"),
        Column(f"{prefix}tvar_99", "tail value at risk at 99% (the mean of the worst 1%)"),
        Column(f"{prefix}tvar_995", "tail value at risk at 99.5%"),
    )


INSURE = FileSpec(
    name="insure CSV",
    what="One row: the annual loss distribution of deploying one agent, as `agentrel insure --json` gives "
    "it, flattened. The first measures are the loss the premium prices (`prices`); the realised loss "
    "and the reversible value at stake follow, each under its own prefix.",
    command="agentrel insure RESULTS --volume N --csv FILE (or --csv - for standard output)",
    columns=(
        *_measures("", "loss (the priced one)"),
        Column("premium", "the premium under `principle`"),
        Column("unpriced_damaging_runs", "damaging runs with no dollar amount (sized by the priced ones)"),
        Column("currency", "`USD`: every price is in US dollars"),
        Column("agent", "the agent"),
        Column("condition", "the condition"),
        Column("volume", "tasks the agent executes a year (`--volume`)"),
        Column("prices", "`realised_loss` (default) or `all_priced` (`--price all`)"),
        *_measures("realised_loss_", "realised loss (substrate and governance damage)"),
        *_measures("reversible_at_stake_", "value at stake in reversible damage"),
        Column("principle", "the premium principle, in words"),
    ),
)

FAULTS = FileSpec(
    name="faults.csv",
    what="One row per preregistered fault run (the schedule's cells x agents x run indices): its lifecycle "
    "scheduled -> armed -> fired -> witnessed or not -> what the agent then did, each state with the "
    "evidence that shows it, re-derived from runs.jsonl and receipts/ (harness/faults/lifecycle.py).",
    command="agentrel export faults RESULTS -o faults.csv",
    columns=(
        Column("run_id", "the run's id (its cell condition is `fault:<fault_id>`)"),
        Column("model", "the agent"),
        Column("task", "the task id"),
        Column("fault_id", "the scheduled fault's id"),
        Column("kind", "`restart`, `lost_response`, `kill` or `partition`"),
        Column("trigger", "the trigger the fault was armed on, as the record states it (empty: never armed)"),
        Column("run_index", "the run index, 1..k"),
        Column(
            "state",
            "the furthest state reached: `missing` (no attempt recorded), `armed` (ended before the trigger: "
            "not exposed), `fired` (no witness verdict), `witnessed` or `unwitnessed`",
        ),
        Column("attempts", "attempts recorded for the run"),
        Column("attempt", "the decisive attempt (empty when missing)"),
        Column("schedule", "scheduled: the manifest schedule listing the cell, with its digest's head"),
        Column("armed", "a recorded attempt ran with this fault armed on its trigger"),
        Column("armed_at", "that attempt's start (UTC)"),
        Column("fired", "the trigger was reached and the injector acted (an actuator receipt exists)"),
        Column("fired_at", "the actuator receipt's clock (seconds since the epoch)"),
        Column("actuator_receipt", "SHA-256 of the actuator receipt's RFC 8785 form"),
        Column("witnessed", "the independent witness showed the fault landed as claimed"),
        Column("witnessed_at", "the witness receipt's clock"),
        Column("witness_receipt", "SHA-256 of the witness receipt's RFC 8785 form"),
        Column(
            "witness_reasons", "why the witness did not confirm it (`; `-separated; empty when witnessed)"
        ),
        Column(
            "receipt_log",
            "the fsynced copy in receipts/: `matches` the record's receipts, `missing`, `differs`, or "
            "`none` (nothing fired)",
        ),
        Column("status", "the decisive attempt's status (`valid`, `not_exposed`, `invalid_injection`, ...)"),
        Column("outcome", "its verdict from the state: PASS, FAIL_SAFE or FAIL_DAMAGE"),
        Column("calls_after_fault", "tool calls the agent made after the faulted call"),
        Column("retried_faulted_call", "one of them repeated the faulted call (same tool, same arguments)"),
        Column("repeated_effects", "irreversible effects committed twice or more (the commit evidence)"),
    ),
)

FILES: tuple[FileSpec, ...] = (DAMAGES, RUNS, CELLS, AXES, INSURE, FAULTS)
BY_KIND = {"damages": DAMAGES, "runs": RUNS, "cells": CELLS, "axes": AXES, "faults": FAULTS}


def describe(spec: FileSpec) -> str:
    """The dictionary as plain text, one column a line: what `agentrel export KIND --describe` prints."""
    width = max(len(c.name) for c in spec.columns)
    lines = [f"{spec.name}: {spec.what}", ""]
    lines += [f"{c.name.ljust(width)}  {c.meaning}" for c in spec.columns]
    return "\n".join(lines) + "\n"
