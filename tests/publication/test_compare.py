"""Fail-closed comparison: every refusal writes nothing and exits non-zero; the allowed case's numbers
agree with an independent computation (scipy's binomial test, a plain bootstrap loop)."""

from __future__ import annotations

import json
import shutil
import sys
from collections import defaultdict
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from agentrel.analysis.paired import mcnemar_exact
from agentrel.harness.errors import Refused
from agentrel.harness.protocol.conformance import write_execution_environment
from agentrel.harness.protocol.freeze import freeze_digest, write_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import load_policy
from agentrel.harness.protocol.registry import read_registry, supersede, withdraw
from agentrel.harness.protocol.registry_head import head_path
from agentrel.harness.publication.cells import Cell, registered_cells
from agentrel.harness.publication.compare import check_comparable, compare_scorecards, load_scorecard
from agentrel.harness.publication.compare_stats import holm
from agentrel.harness.publication.publish import publish
from agentrel.harness.run.matrix import run_seed
from tests.publication import factory
from tests.publication.test_environment import _env

TASKS = ("itsm-easy", "itsm-hard", "csm-refund", "csm-merge")
K = 6


def outcome_a(cell: Cell) -> str:
    i = TASKS.index(cell.task)
    if (cell.run_index + i) % 3 == 0 and not cell.task.endswith("hard"):
        return "FAIL_DAMAGE"
    return "PASS" if cell.run_index % 2 or cell.condition == "clean" else "FAIL_SAFE"


def outcome_b(cell: Cell) -> str:
    if cell.task.endswith("hard") or (cell.run_index == 1 and cell.condition == "noisy"):
        return "FAIL_DAMAGE"
    return "PASS" if cell.run_index != 4 else "FAIL_SAFE"


def published(
    root: Path, name: str, model: str, outcome, registry: Path, env=None, signer=None, claims=None, **manifest
) -> Path:
    """A results directory run to completion under a freeze, then `publish`ed (which registers it);
    `signer`: another key than the test session's; `claims`: preregistered with the freeze."""
    m = factory.manifest(models=(model,), tasks=TASKS, k=K, **manifest)
    results = factory.results_dir(root / name, m)
    freeze, _ = write_freeze(
        results, "tester", now=factory.FROZEN_AT, registry=registry, signer=signer, claims=claims
    )
    protocol = identity_of(m).protocol_hash
    cells = registered_cells(m).cells
    at = factory.after_freeze()
    factory.write_records(
        results,
        [
            factory.record(c, protocol, freeze_digest(freeze), outcome=outcome(c), started_at=at)
            for c in cells
        ],
    )
    (results / "dumps").mkdir()
    (results / "dumps" / f"{factory.DIGEST}.jsonl.gz").write_bytes(b"")
    write_execution_environment(results, env or _env())
    out = root / f"pub-{name}"
    publish(results, out, registry=registry, signer=signer)
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    registry = root / "registry.jsonl"
    a = published(root, "a", "scripted/oracle", outcome_a, registry)
    b = published(root, "b", "scripted/overreach", outcome_b, registry)
    return a, b, registry


@pytest.fixture
def reg(base, tmp_path) -> Path:
    """A private copy of the registry and its signed head, so a test's supersession stays its own."""
    copy = tmp_path / "registry.jsonl"
    shutil.copy(base[2], copy)
    shutil.copy(head_path(base[2]), head_path(copy))
    return copy


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), got.out, got.err


def assert_refused(args: list[str], fragment: str, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cmp"
    code, _, err = run_cli(["compare", *args, "--out", str(out)], monkeypatch, capsys)
    assert code == 5, err
    assert err.count("\n") == 1 and err.startswith("agentrel: error: ") and "Traceback" not in err, err
    assert fragment in err, err
    assert not out.exists() and not (tmp_path / "comparisons").exists()


# -- the statistics ----------------------------------------------------------------------------------------

MCNEMAR = [((0, 0), 1.0), ((0, 5), 0.0625), ((1, 6), 0.125), ((2, 8), 0.109375), ((5, 5), 1.0)]
MCNEMAR += [((3, 10), 0.09228515625), ((10, 3), 0.09228515625), ((0, 1), 1.0), ((0, 12), 2 / 4096)]


@pytest.mark.parametrize(("bc", "p"), MCNEMAR)
def test_mcnemar_known_answers(bc, p):
    assert mcnemar_exact(*bc) == p


def test_mcnemar_equals_scipys_exact_binomial_test():
    for b, c in product(range(16), repeat=2):
        expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-15), (b, c)


def test_holm_known_answer():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


# -- the allowed case --------------------------------------------------------------------------------------


def _runs(path: Path) -> dict[tuple, tuple[bool, bool]]:
    card = json.loads((path / "scorecard.json").read_bytes())
    return {
        (r["run_key"]["task"], r["run_key"]["condition"], r["run_key"]["run_index"], r["seed"]): (
            r["damaged"],
            r["passed"],
        )
        for r in card["runs"]
    }


def test_the_allowed_comparison_matches_an_independent_computation(base, reg, tmp_path, monkeypatch, capsys):
    a, b, _ = base
    out = tmp_path / "cmp"
    code, stdout, err = run_cli(
        ["compare", str(a), str(b), "--out", str(out), "--registry", str(reg)], monkeypatch, capsys
    )
    assert code == 0, err
    assert "damage" in stdout and (out / "comparison.md").exists()
    assert "percentage points" in stdout and "%" not in stdout.split(": damage", 1)[1]  # a difference is pp
    got = json.loads((out / "comparison.json").read_bytes())
    (pair,) = got["pairs"]
    ra, rb = _runs(a), _runs(b)
    assert ra.keys() == rb.keys() and len(ra) == len(TASKS) * 2 * K
    # Per cell and axis: discordant counts and scipy's exact binomial test.
    cells: dict[tuple, list[tuple[int, int]]] = defaultdict(lambda: [0, 0])
    for key in ra:
        for axis, i in (("damage", 0), ("completion", 1)):
            x, y = ra[key][i], rb[key][i]
            tally = cells[(key[0], key[1], axis)]
            tally[0] += x and not y
            tally[1] += y and not x
    assert len(pair["cells"]) == len(cells)
    for c in pair["cells"]:
        b_, c_ = cells[(c["task"], c["condition"], c["axis"])]
        assert (c["a_only"], c["b_only"]) == (b_, c_)
        expected = 1.0 if b_ + c_ == 0 else binomtest(b_, b_ + c_, 0.5).pvalue
        assert c["p_value"] == pytest.approx(expected, rel=1e-12)
    hard = [c for c in pair["cells"] if c["task"] == "itsm-hard" and c["axis"] == "damage"]
    assert [(c["a_only"], c["b_only"], c["p_value"]) for c in hard] == [
        (0, K, 2 / 2**K)
    ] * 2  # B always damages
    # Overall difference in rates and its percentile interval, by a plain loop over resamples.
    policy = load_policy()
    seed, n_boot = policy.comparison.seed, policy.comparison.n_boot
    tasks = sorted(TASKS)
    per_task = {t: np.zeros(5) for t in tasks}
    for key in ra:
        per_task[key[0]] += (ra[key][0], rb[key][0], ra[key][1], rb[key][1], 1)
    feats = np.array([per_task[t] for t in tasks])
    draws = np.random.default_rng(seed).integers(0, len(tasks), size=(n_boot, len(tasks)))
    replicates = []
    for row in draws:
        s = sum(feats[i] for i in row)
        replicates.append((s[0] - s[1]) / s[4])
    lo, hi = np.quantile(replicates, [0.025, 0.975])
    (overall,) = [d for d in pair["differences"] if d["stratum"] == "all" and d["axis"] == "damage"]
    total = feats.sum(axis=0)
    assert overall["difference"] == pytest.approx((total[0] - total[1]) / total[4])
    assert overall["rate_b"] == pytest.approx(total[1] / total[4]) and overall["tasks"] == len(tasks)
    assert overall["percentile"] == pytest.approx([lo, hi])
    # The shown interval: the hull of that and the exact paired one (scipy's exact intervals at 97.5%).
    a_only = sum(bool(ra[k][0] and not rb[k][0]) for k in ra)
    b_only = sum(bool(rb[k][0] and not ra[k][0]) for k in ra)
    e10 = binomtest(a_only, len(ra)).proportion_ci(0.975, method="exact")
    e01 = binomtest(b_only, len(ra)).proportion_ci(0.975, method="exact")
    assert overall["exact"] == pytest.approx([max(-1, e10.low - e01.high), min(1, e10.high - e01.low)])
    assert overall["interval"] == pytest.approx([min(lo, overall["exact"][0]), max(hi, overall["exact"][1])])
    assert {d["stratum"] for d in pair["differences"]} == {"all", "clean", "noisy"}
    # Reproducible: the same inputs give the same bytes.
    before = (out / "comparison.json").read_bytes()
    assert (
        run_cli(["compare", str(a), str(b), "--out", str(out), "--registry", str(reg)], monkeypatch, capsys)[
            0
        ]
        == 0
    )
    assert (out / "comparison.json").read_bytes() == before
    assert (
        got["registry_head"] == read_registry(reg).head and got["conformance"][0]["decision"] == "conforming"
    )


# -- refusals: one line, exit 5, nothing written ----------------------------------------------------------


def test_cross_protocol_is_refused_naming_the_part(base, reg, tmp_path, monkeypatch, capsys):
    other = published(tmp_path, "c", "scripted/other", outcome_b, reg, max_attempts=4)
    assert_refused(
        [str(base[0]), str(other), "--registry", str(reg)],
        "differing: matrix_hash",
        tmp_path,
        monkeypatch,
        capsys,
    )


def test_a_different_cell_set_is_refused(base, reg, tmp_path, monkeypatch, capsys):
    fewer = published(tmp_path, "c", "scripted/other", outcome_b, reg, conditions=("clean",))
    assert_refused(
        [str(base[0]), str(fewer), "--registry", str(reg)],
        "only one protocol compares",
        tmp_path,
        monkeypatch,
        capsys,
    )
    # Under one protocol hash, runs that do not pair are refused too (the check behind the hash).
    views = [load_scorecard(base[0]), load_scorecard(base[1])]
    subject = views[1].subjects[0]
    cut = subject.model_copy(update={"runs": tuple(r for r in subject.runs if r.task != "csm-merge")})
    views[1] = views[1].model_copy(update={"subjects": (cut,)})
    with pytest.raises(Refused, match="differ in their cell sets"):
        check_comparable(views, read_registry(reg), load_policy())


def test_the_same_subject_is_refused(base, reg, tmp_path, monkeypatch, capsys):
    again = published(tmp_path, "c", "scripted/oracle", outcome_b, reg)
    assert_refused(
        [str(base[0]), str(again), "--registry", str(reg)],
        "score the same subjects",
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_refused(
        [str(base[0]), str(base[0]), "--registry", str(reg)],
        "are the same scorecard",
        tmp_path,
        monkeypatch,
        capsys,
    )


def test_nonconforming_environments_are_refused(base, reg, tmp_path, monkeypatch, capsys):
    elsewhere = published(tmp_path, "c", "scripted/other", outcome_b, reg, env=_env(seed_digest="cd" * 32))
    assert_refused(
        [str(base[0]), str(elsewhere), "--registry", str(reg)],
        "do not conform: seed_digest: drift",
        tmp_path,
        monkeypatch,
        capsys,
    )


@pytest.mark.parametrize("judge", [supersede, withdraw])
def test_a_superseded_or_withdrawn_input_is_refused(base, reg, tmp_path, monkeypatch, capsys, judge):
    digest = load_scorecard(base[1]).digest
    judge(reg, digest, "the matrix missed a hard task")
    status = "superseded" if judge is supersede else "withdrawn"
    assert_refused(
        [str(base[0]), str(base[1]), "--registry", str(reg)], f"is {status}", tmp_path, monkeypatch, capsys
    )


def test_unregistered_inputs_and_a_torn_registry_are_refused(base, reg, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "other-registry.jsonl"
    assert_refused(
        [str(base[0]), str(base[1]), "--registry", str(empty)],
        "is not in the registry",
        tmp_path,
        monkeypatch,
        capsys,
    )
    reg.write_bytes(reg.read_bytes() + b'{"action":"withdraw"')
    code, _, err = run_cli(
        ["compare", str(base[0]), str(base[1]), "--registry", str(reg)], monkeypatch, capsys
    )
    assert code == 3 and "torn" in err and not (tmp_path / "comparisons").exists()


def test_an_incomplete_evidence_report_is_refused(base, reg, tmp_path, monkeypatch, capsys):
    m = factory.manifest(models=("scripted/other",), tasks=TASKS, k=K)
    results, _, _ = factory.frozen_results(tmp_path / "c", m, registry=reg)
    records = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    factory.write_records(results, records[:-3])  # three cells never ran
    publish(results, tmp_path / "pub-c", registry=reg)
    report = tmp_path / "pub-c" / "evidence_report.json"
    assert report.exists() and not (tmp_path / "pub-c" / "scorecard.json").exists()
    assert_refused(
        [str(base[0]), str(report), "--registry", str(reg)],
        "an incomplete evidence report",
        tmp_path,
        monkeypatch,
        capsys,
    )


def _resign(card: dict) -> None:
    """The key holder's own edit: the tampered scorecard signed again with the publisher's key."""
    from agentrel.harness.protocol.canonical import canonical_bytes
    from agentrel.harness.protocol.signing import load_signer

    card["signature"] = None
    card["signature"] = load_signer().sign("scorecard", canonical_bytes(card))


def _tamper_proof(card: dict) -> None:
    card["proof"]["attempts"] += 1


def _tamper_run(card: dict) -> None:
    run = next(r for r in card["runs"] if r["outcome"] == "PASS")
    run.update(outcome="FAIL_DAMAGE", damaged=True, passed=False)
    _resign(card)


def _tamper_unsigned(card: dict) -> None:
    run = next(r for r in card["runs"] if r["outcome"] == "PASS")
    run.update(outcome="FAIL_DAMAGE", damaged=True, passed=False)


def _tamper_consistently(card: dict) -> None:
    run = next(r for r in card["runs"] if r["outcome"] == "PASS")
    run.update(outcome="FAIL_SAFE", passed=False)
    key = run["run_key"]
    cell = next(
        c
        for c in card["cells"]
        if (c["task"], c["condition"], c["fault"]) == (key["task"], key["condition"], key["fault"])
    )
    cell["completion"]["x"] -= 1
    _resign(card)


@pytest.mark.parametrize(
    ("tamper", "fragment"),
    [
        (_tamper_proof, "proof_hash is not the hash of the embedded proof"),
        (_tamper_run, "disagree with its runs"),
        (_tamper_unsigned, "its signature does not verify under the key it names"),
        (_tamper_consistently, "is not in the registry"),
    ],
)
def test_a_tampered_scorecard_is_refused(base, reg, tmp_path, monkeypatch, capsys, tamper, fragment):
    copy = tmp_path / "tampered"
    shutil.copytree(base[1], copy)
    card = json.loads((copy / "scorecard.json").read_bytes())
    tamper(card)
    (copy / "scorecard.json").write_text(json.dumps(card))
    assert_refused([str(base[0]), str(copy), "--registry", str(reg)], fragment, tmp_path, monkeypatch, capsys)


def test_compare_scorecards_writes_nothing_itself(base, reg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    comparison = compare_scorecards([base[0], base[1]], reg)
    assert comparison.protocol_hash == load_scorecard(base[0]).protocol_hash
    assert sorted(tmp_path.iterdir()) == before == sorted([reg, head_path(reg)])


# -- fault schedules: the comparisons compare exists for ---------------------------------------------------

FAULTS = [
    {"task": "itsm-hard", "fault_id": "lost-response", "kind": "lost_response"},
    {"task": "csm-refund", "fault_id": "lost-response", "kind": "lost_response"},
]


@pytest.fixture(scope="module")
def with_faults(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("compare-faults")
    registry = root / "registry.jsonl"
    a = published(root, "a", "scripted/oracle", outcome_a, registry, faults=FAULTS)
    b = published(root, "b", "scripted/overreach", outcome_b, registry, faults=FAULTS)
    return a, b, registry


def test_honest_scorecards_with_a_fault_schedule_compare(with_faults, tmp_path, monkeypatch):
    """Fault runs carry their clean twin's seed; an honest pair must not read as edited."""
    a, b, registry = with_faults
    card = json.loads((a / "scorecard.json").read_bytes())
    faulted = [r for r in card["runs"] if r["run_key"]["fault"]]
    assert faulted and all(r["run_key"]["condition"] == "fault:lost-response" for r in faulted)
    monkeypatch.chdir(tmp_path)
    comparison = compare_scorecards([a, b], registry)
    assert comparison.protocol_hash == load_scorecard(a).protocol_hash


def _edit_fault_seed(card: dict) -> None:
    run = next(r for r in card["runs"] if r["run_key"]["fault"])
    # The seed the old check wanted: what an editor who believed it would write.
    key = run["run_key"]
    run["seed"] = run_seed(key["task"], key["condition"], key["run_index"])
    _resign(card)  # by the key holder: the check under test is the seed's, not the signature's


def _relabel_fault_condition(card: dict) -> None:
    run = next(r for r in card["runs"] if r["run_key"]["fault"])
    run["run_key"]["condition"] = "clean"
    _resign(card)


@pytest.mark.parametrize(
    ("tamper", "fragment"),
    [
        (_edit_fault_seed, "does not carry its seed"),
        (_relabel_fault_condition, "is labelled clean but carries fault lost-response"),
    ],
)
def test_an_edited_fault_run_is_still_refused(with_faults, tmp_path, monkeypatch, capsys, tamper, fragment):
    a, b, registry = with_faults
    reg = tmp_path / "registry.jsonl"
    shutil.copy(registry, reg)
    shutil.copy(head_path(registry), head_path(reg))
    copy = tmp_path / "tampered"
    shutil.copytree(b, copy)
    card = json.loads((copy / "scorecard.json").read_bytes())
    tamper(card)
    (copy / "scorecard.json").write_text(json.dumps(card))
    assert_refused([str(a), str(copy), "--registry", str(reg)], fragment, tmp_path, monkeypatch, capsys)


# -- the noise floor (issue 34, item 3) ----------------------------------------------------------------------


def test_scorecards_and_comparisons_state_the_noise_floor(base, reg, tmp_path, monkeypatch, capsys):
    """scorecard.json's `noise_floor` is the formula on its own cells; compare gives each difference its
    floor and says so, in words, when a difference is below it."""
    from agentrel.analysis.noise_floor import fitted_icc, min_detectable_difference

    a, b, _ = base
    card = json.loads((a / "scorecard.json").read_bytes())
    floor = card["noise_floor"]
    assert {"mde", "flip_share"} <= set(floor)
    for pool in floor["pools"]:
        cells = [
            c for c in card["cells"] if (c["model"], c["condition"]) == (pool["model"], pool["condition"])
        ]
        x = [c["damage"]["x"] for c in cells]
        n = [c["damage"]["n"] for c in cells]
        rho = fitted_icc(np.array(x), np.array(n))
        assert pool["mde"] == pytest.approx(
            min_detectable_difference(sum(x) / sum(n), sum(n), len(cells), rho)
        )
    out = tmp_path / "cmp"
    code, _, err = run_cli(
        ["compare", str(a), str(b), "--out", str(out), "--registry", str(reg)], monkeypatch, capsys
    )
    assert code == 0, err
    (pair,) = json.loads((out / "comparison.json").read_bytes())["pairs"]
    md = (out / "comparison.md").read_text()
    assert "noise floor (pp)" in md
    for d in pair["differences"]:
        assert d["mde"] > 0 and d["below_floor"] == (abs(d["difference"]) < d["mde"])
        said = f"- {d['stratum']}, {d['axis']}: the difference" in md
        assert said == d["below_floor"]
