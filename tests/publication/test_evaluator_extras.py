"""Installing an optional extra does not move the protocol of an audit that never uses it (issue 33.2);
when the evaluator does move, the refusal names the libraries and versions that changed.

The attack the binding still stops: a required library swapped under the same version (the lark shadow
in test_evaluator_digest.py) or upgraded; both move the digest, and the message says which.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from agentrel.harness.protocol.binding import evaluator_change
from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.evaluator import (
    EvaluatorManifest,
    current_evaluator_manifest,
    describe_change,
)
from agentrel.harness.results.layout import EVALUATOR

CODE = (
    "import json\n"
    "from agentrel.harness.protocol.evaluator import evaluator_manifest\n"
    "m = evaluator_manifest()\n"
    "print(json.dumps({'digest': m.digest, 'libraries': [l[:2] for l in m.libraries]}))\n"
)


def _manifest_with(path: Path | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    done = subprocess.run(
        [sys.executable, "-P", "-c", CODE], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _install_fake(site: Path, name: str, version: str, package: Path | None = None) -> None:
    """A distribution as pip leaves it: the package folder and a dist-info whose RECORD lists its files."""
    top = site / name
    if package is not None:
        shutil.copytree(package, top, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        top.mkdir(parents=True)
        (top / "__init__.py").write_text("VERSION = 'fake'\n")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    files = sorted(p.relative_to(site).as_posix() for p in top.rglob("*") if p.is_file())
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files) + f"{info.name}/RECORD,,\n")
    (info / "top_level.txt").write_text(f"{name}\n")


def test_installing_the_ray_and_docker_extras_does_not_move_the_digest(tmp_path):
    """`pip install 'agentrel[ray]'` (or docker) after an audit: the same audit's protocol stays put."""
    honest = _manifest_with(None)
    site = tmp_path / "site"
    _install_fake(site, "ray", "2.60.0")
    _install_fake(site, "docker", "7.1.0")
    with_extras = _manifest_with(site)
    assert with_extras == honest
    assert not any(
        name in ("ray", "docker", "import:ray", "import:docker") for name, _ in honest["libraries"]
    )


def test_a_required_library_upgraded_moves_the_digest_and_is_named(tmp_path):
    """The negative: an extra that upgrades a library the evaluator computes with (here lark) does move
    the protocol, and what changed is named with both versions."""
    import lark

    honest = _manifest_with(None)
    site = tmp_path / "site"
    _install_fake(site, "lark", "99.0.0", package=Path(lark.__file__).parent)
    (site / "lark" / "__init__.py").write_text((site / "lark" / "__init__.py").read_text() + "\n")
    upgraded = _manifest_with(site)
    assert upgraded["digest"] != honest["digest"]
    assert ["lark", "99.0.0"] in upgraded["libraries"]


def test_the_refusal_names_the_library_and_versions_that_changed(tmp_path):
    now = current_evaluator_manifest()
    libraries = tuple(
        (name, "1.0.0" if name == "lark" else version, "0" * 64 if name == "lark" else digest, n)
        for name, version, digest, n in now.libraries
    )
    then = EvaluatorManifest(entries=now.entries, files=now.files, libraries=libraries)
    (tmp_path / EVALUATOR).write_bytes(canonical_bytes(then.model_dump(mode="json")))
    said = evaluator_change(tmp_path, then.digest, now.digest)
    current_lark = next(v for name, v, _, _ in now.libraries if name == "lark")
    assert f"lark 1.0.0 -> {current_lark}" in said
    assert evaluator_change(tmp_path, now.digest, now.digest) == ""


def test_a_doctored_evaluator_file_is_not_believed(tmp_path):
    """evaluator.json is only an explanation: one that does not hash to the recorded digest names nothing."""
    now = current_evaluator_manifest()
    (tmp_path / EVALUATOR).write_bytes(canonical_bytes(now.model_dump(mode="json")))
    said = evaluator_change(tmp_path, "f" * 64, now.digest)
    assert "does not match the recorded digest" in said and "->" not in said
    assert "no readable evaluator.json" in evaluator_change(tmp_path / "nowhere", "f" * 64, now.digest)


def test_describe_change_says_same_version_other_files_and_files():
    now = current_evaluator_manifest()
    name, version, _, n = now.libraries[0]
    swapped = ((name, version, "0" * 64, n), *now.libraries[1:])
    files = ((now.files[0][0], "0" * 64), *now.files[1:])
    then = EvaluatorManifest(entries=now.entries, files=files, libraries=swapped)
    said = describe_change(then, now)
    assert f"{name} {version} (same version, other files)" in said
    assert f"AgentRel's own files: {now.files[0][0]}" in said
