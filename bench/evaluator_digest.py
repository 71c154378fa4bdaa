"""Benchmark: the evaluator digest, as audit start and publish pay it (harness/protocol/evaluator.py).

Not a timed test. Runs in fresh interpreters (the digest is cached per process), side by side: a
derivation from the files (`derived`: the import-graph walk, every evaluated file hashed, every bound
library's files hashed through the file-identity cache), the project part alone (the walk and the project
files), the manifest a later process takes from the cross-process cache (`first`: what an audit's start
pays while nothing changed, harness/protocol/evaluator_cache.py), and a second digest in the same process.
LAST line: ``files=<n> libraries=<n> library_mb=<m> derived_seconds=<d> first_seconds=<s>
project_seconds=<p> cached_ms=<c> ratio=<d/s>``, each the best of three.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

CHILD = r"""
import json, time
t0 = time.perf_counter()
from agentrel.harness.protocol.evaluator import current_evaluator_digest, evaluator_manifest
from agentrel.harness.protocol.sources import evaluated_sources
import hashlib
t = time.perf_counter()
found = evaluated_sources()
for _, path in found.files:
    hashlib.sha256(path.read_bytes()).hexdigest()
project = time.perf_counter() - t
import agentrel.harness.protocol.sources as sources
sources._parse.cache_clear()  # the walk above parsed every module: derive as a fresh process would
t = time.perf_counter()
evaluator_manifest().digest
derived = time.perf_counter() - t
t = time.perf_counter()
current_evaluator_digest()
first = time.perf_counter() - t
t = time.perf_counter()
current_evaluator_digest()
cached = time.perf_counter() - t
m = evaluator_manifest()
print(json.dumps({"files": len(m.files), "libraries": len(m.libraries), "project": project,
                  "derived": derived, "first": first, "cached": cached}))
"""


def _library_mb() -> float:
    import importlib.metadata as md

    from agentrel.harness.protocol.evaluator import evaluator_manifest
    from agentrel.harness.protocol.libraries import _code_files

    total = 0
    for name, *_ in evaluator_manifest().libraries:
        if name.startswith("import:"):
            continue
        for _, path in _code_files(md.distribution(name)):
            with contextlib.suppress(OSError):
                total += path.stat().st_size
    return total / 1e6


def main() -> None:
    runs = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-P", "-c", CHILD], capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]))
    best = {k: min(r[k] for r in runs) for k in ("project", "derived", "first", "cached")}
    print(
        f"files={runs[0]['files']} libraries={runs[0]['libraries']} library_mb={_library_mb():.0f} "
        f"derived_seconds={best['derived']:.3f} first_seconds={best['first']:.3f} "
        f"project_seconds={best['project']:.3f} cached_ms={1000 * best['cached']:.3f} "
        f"ratio={best['derived'] / best['first']:.1f}"
    )


if __name__ == "__main__":
    main()
