"""Results directory storage: content-addressed dumps, deltas rebuilt exactly, torn tails dropped."""

import pytest

from agentrel.dsl.state import DumpFormatError, State, TableState
from agentrel.harness.results.directory import ResultsDir
from agentrel.sandbox.environments.enterprise.seed import generate


def changed_copy(base: State) -> State:
    after = State({n: TableState(t.info, dict(t.rows)) for n, t in base.tables.items()})
    invoices = after.tables["invoices"]
    row = list(invoices.rows[(1,)])
    row[invoices.info.columns.index("amount")] = "1.00"
    invoices.rows[(1,)] = tuple(row)
    del after.tables["group_members"].rows[next(iter(after.tables["group_members"].rows))]
    return after


def test_delta_dumps_rebuild_the_exact_full_state(tmp_path):
    base = generate()
    after = changed_copy(base)
    rd = ResultsDir(tmp_path)
    rd.open()
    base_digest = rd.store_dump(base)
    digest = rd.store_dump(after, base)
    assert digest == after.digest() != base_digest  # reusing the base's table hashes changes nothing
    assert (tmp_path / "dumps" / f"{digest}.delta.jsonl.gz").stat().st_size < 2_000
    rebuilt = rd.load_dump(digest)
    assert rebuilt.digest() == digest
    assert rebuilt.tables["invoices"].rows == after.tables["invoices"].rows
    assert rd.store_dump(after, base) == digest  # stored once
    assert len(list((tmp_path / "dumps").iterdir())) == 2


def test_a_delta_against_another_base_is_refused(tmp_path):
    base = generate()
    rd = ResultsDir(tmp_path)
    rd.open()
    digest = rd.store_dump(changed_copy(base), base)
    from agentrel.dsl.state import load_delta

    with pytest.raises(DumpFormatError, match="delta is against"):
        load_delta(tmp_path / "dumps" / f"{digest}.delta.jsonl.gz", generate("another-seed"))


def test_a_template_dump_copied_onto_a_full_disk_leaves_no_half_written_file(tmp_path, monkeypatch):
    """The cached template dump is copied into the results; the disk fills mid-copy: the audit says so
    (EnvironmentFailure, exit 4) and leaves only whole files behind."""
    import errno
    import shutil

    from agentrel.harness.errors import EnvironmentFailure

    base = generate()
    cached = tmp_path / "cache.jsonl.gz"
    base.save(cached)
    rd = ResultsDir(tmp_path / "r")
    rd.open()

    def full(src, dst):
        (tmp_path / "r" / "dumps" / dst.name).write_bytes(cached.read_bytes()[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shutil, "copyfile", full)
    with pytest.raises(EnvironmentFailure, match="No space left"):
        rd.store_dump(base, copy_from=cached)
    assert list((tmp_path / "r" / "dumps").iterdir()) == []
