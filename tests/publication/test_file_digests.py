"""The file-hash cache behind the evaluator digest: a hit only for a file whose identity is unchanged.

The attack it must not let through: edit an installed library file and put its modification time back
(`touch -d`, os.utime), hoping the cached hash of the old bytes is used.
"""

import hashlib
import os
import time

from agentrel.harness.protocol import file_digests
from agentrel.harness.protocol.file_digests import sha256_files


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_edit_with_the_modification_time_put_back_is_hashed_again(tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.2)
    cache = tmp_path / "cache.json"
    lib = tmp_path / "lib.py"
    lib.write_bytes(b"def label(): return 'damage'\n")
    time.sleep(0.3)  # past the racy window, so the first hash is remembered
    assert sha256_files([lib], cache)[lib] == _sha(lib.read_bytes())
    assert str(lib) in cache.read_text()
    st = lib.stat()
    lib.write_bytes(b"def label(): return 'clean!'\n")  # the same size
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same modification time
    assert lib.stat().st_size == st.st_size and lib.stat().st_mtime_ns == st.st_mtime_ns
    assert sha256_files([lib], cache)[lib] == _sha(b"def label(): return 'clean!'\n")


def test_an_unchanged_file_is_read_from_the_cache(tmp_path, monkeypatch):
    """A hit really skips the read: the cached value is returned for an unchanged identity."""
    monkeypatch.setattr(file_digests, "RACY_S", 0.2)
    cache = tmp_path / "cache.json"
    lib = tmp_path / "lib.py"
    lib.write_bytes(b"x = 1\n")
    time.sleep(0.3)
    sha256_files([lib], cache)
    monkeypatch.setattr(file_digests, "_sha256", lambda path: "hashed-again")
    assert sha256_files([lib], cache)[lib] == _sha(b"x = 1\n")


def test_a_file_changed_just_now_is_not_remembered(tmp_path):
    cache = tmp_path / "cache.json"
    lib = tmp_path / "lib.py"
    lib.write_bytes(b"x = 1\n")
    assert sha256_files([lib], cache)[lib] == _sha(b"x = 1\n")
    assert not cache.exists() or str(lib) not in cache.read_text()


def test_a_broken_cache_is_ignored_and_a_missing_file_is_missing(tmp_path):
    cache = tmp_path / "cache.json"
    cache.write_text("{not json")
    lib = tmp_path / "lib.py"
    lib.write_bytes(b"y = 2\n")
    gone = tmp_path / "gone.py"
    assert sha256_files([lib, gone], cache) == {lib: _sha(b"y = 2\n"), gone: "missing"}


def test_each_python_environment_keeps_its_own_cache(tmp_path, monkeypatch):
    """One cache shared by every venv grew without bound (103 MB read at each audit's start)."""
    monkeypatch.setenv("AGENTREL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(file_digests.sys, "prefix", "/venvs/one")
    one = file_digests.cache_file()
    monkeypatch.setattr(file_digests.sys, "prefix", "/venvs/two")
    assert file_digests.cache_file() != one and one.parent == tmp_path


def test_a_deleted_file_leaves_the_cache_when_it_is_next_written(tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.2)
    cache = tmp_path / "cache.json"
    old, new = tmp_path / "old.py", tmp_path / "new.py"
    old.write_bytes(b"a = 1\n")
    time.sleep(0.3)
    sha256_files([old], cache)
    assert str(old) in cache.read_text()
    old.unlink()
    new.write_bytes(b"b = 2\n")
    time.sleep(0.3)
    sha256_files([new], cache)
    assert str(new) in cache.read_text() and str(old) not in cache.read_text()
