"""`analyze`'s status check (publication/validate.py) loads only what deciding needs, and holds the cyclic
collector only while it validates: the speed-ups of bench/analysis_scale.py, kept honest. What it refuses
is the publication tests' (test_publish.py, test_attacks_evidence.py, test_claims.py, ...), which run
through the same `validate`."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from agentrel.harness.errors import UserError
from agentrel.harness.publication import publish, validate

NOT_FOR_DECIDING = (
    "agentrel.harness.publication.scorecard",
    "agentrel.harness.publication.render",
    "agentrel.analysis.claims_judge",
    "agentrel.analysis.betabinom",
    "agentrel.analysis.error_budget",
    "scipy.stats",
    "matplotlib",
)


def test_the_check_imports_no_scorecard_rendering_or_estimator():
    code = (
        "import sys; import agentrel.harness.publication.validate; "
        f"print(sorted(m for m in {NOT_FOR_DECIDING!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_publish_validates_through_the_same_function():
    """One validator: publish's proof and the status line's are the same code, not two copies."""
    assert publish.validate is validate.validate
    assert publish.eligibility_of is validate.eligibility_of and publish.status_line is validate.status_line


def test_the_collector_is_given_back_even_when_validation_fails(tmp_path):
    """A results directory without a manifest is refused; the collector is enabled again afterwards."""
    assert gc.isenabled()
    with pytest.raises(UserError, match=r"no manifest\.json"):
        validate.eligibility_of(tmp_path)
    assert gc.isenabled()
