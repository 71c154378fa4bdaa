from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from agentrel.analysis.inputs import load_input
from agentrel.analysis.normalized import OPERATIONAL_COLUMNS, RUN_COLUMNS, InputError, MixedProtocolsError
from tests.analysis.conftest import PROTOCOL, event, record, write_results

HEADER = "model,task,run,damaged,condition,passed,errored,mutated,dollars,severity,irreversibility,notes\n"


def _csv(tmp_path: Path, body: str, header: str = HEADER, name: str = "outcomes.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + body)
    return path


def test_real_outcomes_csv(arb_csv):
    loaded = load_input(arb_csv)
    runs = loaded.runs
    assert list(runs.columns) == list(RUN_COLUMNS)
    assert len(runs) == 1728 and runs["model"].nunique() == 9 and runs["task"].nunique() == 20
    assert int(runs["damaged"].sum()) == 69
    assert set(runs["condition"]) == {"default"}
    assert set(runs["agent_kind"]) == {"model"}
    assert len(loaded.events) == 69 and loaded.events_synthesized
    priced = sorted(d for d in runs["dollars"] if d)
    assert priced == [Decimal("28166.0"), Decimal("59379.0")]
    assert set(runs.loc[runs["damaged"], "severity"].dropna()) == {"low", "medium", "high"}
    assert int(runs["errored"].sum()) == 21


def test_csv_value_forms(tmp_path):
    path = _csv(
        tmp_path,
        "m,t,1,TRUE,,yes-ignored,0,1,12.50,High,SUBSTRATE,x\n"
        "m,t,2,false,noisy,1,,False,,,,\n"
        "reference/stochastic,t,1,0,,,,,,,,\n",
        header=HEADER.replace("passed", "PASSED"),
    )
    with pytest.raises(InputError, match=r"outcomes.csv:2: column 'passed'"):
        load_input(path)
    path = _csv(
        tmp_path,
        "m,t,1,TRUE,,0,0,1,12.50,High,SUBSTRATE,x\n"
        "m,t,2,false,noisy,1,,False,,,,\n"
        "reference/stochastic,t,1,0,,,,,,,,\n",
    )
    runs = load_input(path).runs
    assert runs["damaged"].tolist() == [True, False, False]
    assert runs["condition"].tolist() == ["default", "noisy", "default"]
    assert runs["severity"].tolist()[0] == "high" and runs["irreversibility"].tolist()[0] == "substrate"
    assert runs["dollars"].tolist() == [Decimal("12.50"), Decimal("0"), Decimal("0")]
    assert runs["errored"].isna().tolist() == [False, True, True]
    assert runs["agent_kind"].tolist() == ["model", "model", "reference"]


def test_csv_minimal_columns_and_any_order(tmp_path):
    path = _csv(tmp_path, "1,0,t,m\n2,1,t,m\n", header="run,damaged,task,model\n")
    loaded = load_input(path)
    assert loaded.runs["damaged"].tolist() == [False, True]
    assert loaded.runs["passed"].isna().all()
    assert not loaded.has_dollars and loaded.runs["dollars"].isna().all()


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("m,t,1,maybe,,,,,,,,\n", r":2: column 'damaged': expected true/false/1/0, got 'maybe'"),
        ("m,t,1,1,,,,,,,,\nm,t,2,,,,,,,,,\n", r":3: column 'damaged'"),
        (",t,1,1,,,,,,,,\n", r":2: column 'model': empty value"),
        ("m,t,1,1,,,,,,catastrophic,,\n", r":2: column 'severity': 'catastrophic' is not one of"),
        ("m,t,1,1,,,,,,,permanent,\n", r":2: column 'irreversibility'"),
        ("m,t,1,1,,,,,-5,,,\n", r":2: column 'dollars': '-5' is negative"),
        ("m,t,1,1,,,,,12,5,,,\n", r"outcomes.csv:2: 13 fields, the header has 12"),
        ("m,t,1,1,,,,,abc,,,\n", r":2: column 'dollars': 'abc' is not a decimal number"),
        ("m,t,1,0,,,,,12.00,,,\n", r":2: column 'dollars': '12.00' on a run that is not damaged"),
        (
            "m,t,1,1,,,,,,,,\nm,t,1,0,,,,,,,,\n",
            r":3: column 'run': run '1' of cell \(m, t, default\) already appears on line 2",
        ),
        ("m,t,1,1,,2,,,,,,\n", r":2: column 'passed'"),
    ],
)
def test_csv_bad_rows_name_line_and_column(tmp_path, body, match):
    with pytest.raises(InputError, match=match) as info:
        load_input(_csv(tmp_path, body))
    assert "\n" not in str(info.value)


def test_csv_missing_required_column(tmp_path):
    with pytest.raises(InputError, match=r":1: missing required column\(s\) damaged"):
        load_input(_csv(tmp_path, "m,t,1\n", header="model,task,run\n"))


def test_csv_header_only_and_unknown_input(tmp_path):
    with pytest.raises(InputError, match="no runs"):
        load_input(_csv(tmp_path, ""))
    other = tmp_path / "data.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="expected a results directory"):
        load_input(other)
    with pytest.raises(InputError, match="no such file"):
        load_input(tmp_path / "absent.csv")


def test_results_directory(small_results):
    loaded = load_input(small_results)
    runs = loaded.runs
    assert list(runs.columns) == list(RUN_COLUMNS)
    assert len(runs) == 24 and len(loaded.invalid) == 2
    assert sorted(loaded.invalid["message"]) == ["db clone failed", "dump failed"]
    assert loaded.protocol_hashes == [PROTOCOL]
    assert loaded.agents == {"model-a": "model", "reference/stochastic": "reference"}
    t1 = runs[(runs["model"] == "model-a") & (runs["task"] == "t1")]
    assert t1["damaged"].tolist() == [True, False, True, False]
    assert t1["dollars"].tolist() == [Decimal("100.75"), Decimal("0.00"), Decimal("100.75"), Decimal("0.00")]
    assert (
        t1["severity"].tolist()[0] == "high" and t1["irreversibility"].tolist()[0] == "reversible;substrate"
    )
    assert int(runs["errored"].sum()) == 1 and runs["mutated"].sum() == 5
    assert runs["cost_usd"].tolist()[0] == pytest.approx(0.02)
    events = loaded.events
    assert len(events) == 2 * 2 + 3
    assert events["dollars"].map(str).tolist()[:2] == ["100.50", "0.25"]
    assert events["key"].tolist()[0] == "[7]"


def test_results_later_record_supersedes(tmp_path):
    recs = [record("m", "t", 0, None, error={"kind": "harness", "message": "x"}), record("m", "t", 0, "PASS")]
    loaded = load_input(write_results(tmp_path / "r", recs))
    assert len(loaded.runs) == 1 and len(loaded.invalid) == 0
    assert any("superseded" in n for n in loaded.notes)


def test_results_refuse_mixed_protocols(tmp_path):
    recs = [record("m", "t", 0), record("m", "t", 1, protocol="b" * 64)]
    directory = write_results(tmp_path / "r", recs)
    with pytest.raises(MixedProtocolsError, match="2 different protocol hashes"):
        load_input(directory)
    loaded = load_input(directory, allow_mixed_protocols=True)
    assert loaded.protocol_hashes == sorted(["a" * 64, "b" * 64])


def test_results_manifest_hash_must_match(tmp_path):
    directory = write_results(tmp_path / "r", [record("m", "t", 0)], protocol="c" * 64)
    with pytest.raises(MixedProtocolsError):
        load_input(directory)


def test_results_bad_lines_name_the_line(tmp_path):
    directory = write_results(tmp_path / "r", [record("m", "t", 0), record("m", "t", 1)])
    runs = directory / "runs.jsonl"
    lines = runs.read_text().splitlines()
    runs.write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    with pytest.raises(InputError, match=r"runs.jsonl:2: not valid JSON"):
        load_input(directory)
    bad = json.loads(lines[1])
    bad["verdict"]["outcome"] = "MAYBE"
    runs.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"runs.jsonl:2: field 'verdict.outcome'"):
        load_input(directory)
    with pytest.raises(InputError, match=r"no runs\.jsonl"):
        load_input(tmp_path)


def test_results_without_manifest_or_valid_runs(tmp_path):
    directory = write_results(tmp_path / "r", [record("m", "t", 0)])
    (directory / "manifest.json").unlink()
    assert any("no manifest.json" in n for n in load_input(directory).notes)
    only_failures = write_results(tmp_path / "f", [record("m", "t", 0, None)])
    with pytest.raises(InputError, match="no valid runs"):
        load_input(only_failures)


def test_csv_and_results_give_the_same_table(tmp_path):
    recs = [
        record("m", "t1", 0, "FAIL_DAMAGE", events=[event("5.50", "medium", "governance")]),
        record("m", "t1", 1, "PASS"),
        record("m", "t2", 0, "FAIL_SAFE", error={"kind": "agent", "message": "x"}, mutated=True),
        record("reference/x", "t1", 0, "PASS", kind="reference"),
    ]
    from_results = load_input(write_results(tmp_path / "r", recs)).runs
    csv = _csv(
        tmp_path,
        "m,t1,0,1,clean,0,0,1,5.50,medium,governance,\n"
        "m,t1,1,0,clean,1,0,0,0.00,,,\n"
        "m,t2,0,1,clean,0,1,1,,,,\n"  # mutation-then-error counts as damage
        "reference/x,t1,0,0,clean,1,0,0,,,,\n",
    )
    from_csv = load_input(csv).runs
    # A CSV records no tool calls or events: its operational columns are "unknown", not the results' 0.
    skip = ("run_id", "protocol_hash", "cost_usd", "cost_source", *OPERATIONAL_COLUMNS)
    cols = [c for c in RUN_COLUMNS if c not in skip]
    key = ["model", "task", "run"]
    left = from_results[cols].sort_values(key).reset_index(drop=True)
    right = from_csv[cols].sort_values(key).reset_index(drop=True)
    right["dollars"] = right["dollars"].map(lambda d: d.quantize(Decimal("0.01")))
    pd.testing.assert_frame_equal(left, right)


def test_results_torn_last_line_is_skipped(tmp_path):
    directory = write_results(tmp_path / "r", [record("m", "t", 0), record("m", "t", 1)])
    runs = directory / "runs.jsonl"
    runs.write_text(runs.read_text() + json.dumps(record("m", "t", 2))[:50])
    loaded = load_input(directory)
    assert len(loaded.runs) == 2
    assert any("torn last line" in n for n in loaded.notes)


def test_manifest_hash_computed_like_the_harness(tmp_path):
    """The harness's manifest.json has no protocol_hash field: the hash is SHA-256 of its RFC 8785 form."""
    import hashlib

    import rfc8785

    manifest = {"format": "agentrel-manifest/1", "agents": [{"name": "m", "kind": "model"}], "k": 2}
    digest = hashlib.sha256(rfc8785.dumps(manifest)).hexdigest()
    directory = write_results(tmp_path / "r", [record("m", "t", 0, protocol=digest)])
    (directory / "manifest.json").write_bytes(rfc8785.dumps(manifest))
    assert load_input(directory).protocol_hashes == [digest]
    manifest["k"] = 3
    (directory / "manifest.json").write_bytes(rfc8785.dumps(manifest))
    with pytest.raises(MixedProtocolsError):
        load_input(directory)


def test_protocol_json_names_the_hash_records_carry(tmp_path):
    """Beside a manifest it names, protocol.json's root is the one hash the records may carry (the
    manifest's own hash then mixes protocols); one of another manifest is refused in one line."""
    import hashlib

    import rfc8785

    manifest = {"format": "agentrel-manifest/1", "agents": [{"name": "m", "kind": "model"}], "k": 2}
    digest, root = hashlib.sha256(rfc8785.dumps(manifest)).hexdigest(), "c" * 64
    directory = write_results(tmp_path / "r", [record("m", "t", 0, protocol=root)])
    (directory / "manifest.json").write_bytes(rfc8785.dumps(manifest))
    (directory / "protocol.json").write_text(json.dumps({"protocol_hash": root, "manifest_hash": digest}))
    assert load_input(directory).protocol_hashes == [root]
    (directory / "runs.jsonl").write_text(json.dumps(record("m", "t", 0, protocol=digest)) + "\n")
    with pytest.raises(MixedProtocolsError):
        load_input(directory)
    (directory / "protocol.json").write_text(json.dumps({"protocol_hash": root, "manifest_hash": "d" * 64}))
    with pytest.raises(InputError, match=r"protocol\.json: is the identity of another manifest"):
        load_input(directory)
    (directory / "protocol.json").write_text("[]")
    with pytest.raises(InputError, match="not a protocol identity"):
        load_input(directory)


def test_reads_records_written_by_the_harness_record_model(tmp_path):
    """Contract check: a record built and appended by harness.results loads with the same meaning."""
    from agentrel.dsl.verdict import DamageEvent, RequirementResult, Verdict
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.results.record import RunRecord

    ev = DamageEvent(
        rule="wrong_row",
        table="incident",
        key=(7, "a"),
        op="update",
        changed_columns=("state",),
        severity="high",
        irreversibility="substrate",
        dollars=Decimal("12.50"),
    )
    verdict = Verdict(
        outcome="FAIL_DAMAGE",
        sub_label="completed_damage",
        inconsistent=False,
        mutated=True,
        changes=1,
        events=[ev],
        max_severity="high",
        dollars=Decimal("12.50"),
        irreversibility=["substrate"],
        requirements=[RequirementResult(label="r", met=False)],
    )
    rec = RunRecord(
        run_id="m__t__clean__0000",
        model="m",
        agent_kind="model",
        task="t",
        condition="clean",
        run_index=0,
        seed="s",
        protocol_hash=PROTOCOL,
        verdict=verdict,
        before_digest="d",
        started_at="2026-01-01T00:00:00Z",
        cost_usd=0.5,
    )
    directory = tmp_path / "r"
    results = ResultsDir(directory)
    results.open()
    results.append(rec)
    (directory / "manifest.json").write_text(json.dumps({"protocol_hash": PROTOCOL, "agents": []}))
    loaded = load_input(directory)
    run = loaded.runs.iloc[0]
    assert bool(run["damaged"]) and not bool(run["passed"]) and bool(run["mutated"])
    assert run["dollars"] == Decimal("12.50") and run["severity"] == "high" and run["cost_usd"] == 0.5
    assert loaded.events.iloc[0]["key"] == '[7,"a"]'
