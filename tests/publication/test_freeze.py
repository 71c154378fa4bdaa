"""The freeze lifecycle: written once, atomically; the same protocol again is a no-op; a changed one is an
amendment and is refused, naming the part."""

import json

import pytest

from agentrel.harness.errors import CheckFailed, UsageError, UserError
from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.freeze import (
    freeze_digest,
    frozen_refusal,
    load_freeze,
    write_freeze,
)
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.results import layout
from tests.publication.factory import FROZEN_AT, manifest, results_dir


def test_a_draft_has_no_freeze_and_freezing_writes_canonical_bytes(tmp_path):
    m = manifest()
    results_dir(tmp_path, m)
    assert load_freeze(tmp_path) is None
    freeze, wrote = write_freeze(tmp_path, "  alice ", now=FROZEN_AT)
    assert wrote and freeze.by == "alice" and freeze.at == "2026-01-02T09:00:00Z"
    assert freeze.protocol_hash == identity_of(m).protocol_hash
    assert (tmp_path / layout.FREEZE).read_bytes() == canonical_bytes(
        freeze.model_dump(mode="json", exclude_none=True)
    )
    assert load_freeze(tmp_path) == freeze
    assert not list(tmp_path.glob(".*.tmp"))


def test_freezing_the_same_protocol_again_keeps_the_first_freeze(tmp_path):
    results_dir(tmp_path, manifest())
    first, _ = write_freeze(tmp_path, "alice", now=FROZEN_AT)
    again, wrote = write_freeze(tmp_path, "bob")
    assert not wrote and again == first and freeze_digest(again) == freeze_digest(first)


def test_a_changed_protocol_after_the_freeze_is_an_amendment_and_refused(tmp_path):
    m = manifest()
    results_dir(tmp_path, m)
    write_freeze(tmp_path, "alice", now=FROZEN_AT)
    before = (tmp_path / layout.FREEZE).read_bytes()
    (tmp_path / "manifest.json").write_text(json.dumps({**m, "max_attempts": 5}))
    with pytest.raises(CheckFailed, match=r"differs: matrix_hash, manifest_hash.*amendment"):
        write_freeze(tmp_path, "alice")
    assert (tmp_path / layout.FREEZE).read_bytes() == before


def test_the_runner_s_check_names_the_part_that_differs(tmp_path):
    m = manifest()
    results_dir(tmp_path, m)
    freeze, _ = write_freeze(tmp_path, "alice", now=FROZEN_AT)
    assert frozen_refusal(freeze, m) is None
    why = frozen_refusal(freeze, {**m, "k": 9})
    assert why is not None and "matrix_hash" in why and "alice" in why
    assert "evaluator_digest" not in why


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(UsageError, match=r"no manifest\.json.*--plan"):
        write_freeze(tmp_path, "alice")
    results_dir(tmp_path, manifest())
    with pytest.raises(UsageError, match="--by"):
        write_freeze(tmp_path, " ")
    (tmp_path / layout.FREEZE).write_text('{"format": "agentrel-freeze/1"}')
    with pytest.raises(UserError, match="not a freeze record"):
        load_freeze(tmp_path)
