"""The image build's deterministic parts, and the image `make test-docker` built."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from agentrel.sandbox.image import archive, sources
from agentrel.sandbox.image.build import local_major
from agentrel.sandbox.servers.docker import LABEL, USER_LABEL, client


def _tree(root: Path, mtime: int) -> None:
    (root / "b").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "b" / "z").write_text("z")
    (root / "b" / "y").symlink_to("z")
    os.link(root / "b" / "z", root / "b" / "hard")
    for p in [root / "a.txt", root / "b" / "z", root / "b"]:
        os.utime(p, (mtime, mtime))


def test_layer_is_the_same_bytes_whatever_the_build_time(tmp_path: Path) -> None:
    _tree(tmp_path / "one", 2_000_000_000)
    _tree(tmp_path / "two", 2_100_000_000)
    clamp = 1_700_000_000
    a = archive.write_layer(tmp_path / "one", tmp_path / "one.tar", clamp)
    b = archive.write_layer(tmp_path / "two", tmp_path / "two.tar", clamp)
    assert a == b
    with tarfile.open(tmp_path / "one.tar") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["a.txt", "b", "b/hard", "b/y", "b/z"]
    assert all(m.mtime <= clamp and m.uname == "" for m in members)
    assert members[4].islnk() or members[2].islnk()  # one hard link, not two copies


def test_image_id_is_the_hash_of_the_config(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar"
    layer.write_bytes(b"\0" * 1024)
    config = archive.image_config("ab" * 32, "amd64", 1_700_000_000, ["PATH=/bin"], ["true"], "1:1", {})
    again = archive.image_config("ab" * 32, "amd64", 1_700_000_000, ["PATH=/bin"], ["true"], "1:1", {})
    assert config == again
    id1 = archive.write_archive(layer, "ab" * 32, config, "x:y", tmp_path / "a.tar")
    id2 = archive.write_archive(layer, "ab" * 32, config, "x:y", tmp_path / "b.tar")
    assert id1 == id2 and (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_mirror_comes_from_the_hosts_apt_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://sec.example/debian-security\n"
        "Suites: bookworm-security\n"
    )
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://old.example/debian trixie main\n")
    assert sources.host_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    assert sources.host_mirror("trixie", tmp_path) == "http://old.example/debian"


def test_built_image_is_labelled_and_has_one_deterministic_layer(image: str) -> None:
    engine = client()
    found = engine.images.get(image)
    labels = found.labels
    assert labels[LABEL] == "1" and labels[USER_LABEL].count(":") == 1
    assert labels["org.agentrel.postgres"].split(".")[0] == local_major()
    assert len(found.attrs["RootFS"]["Layers"]) == 1
