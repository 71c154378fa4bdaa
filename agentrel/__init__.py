"""AgentRel: audit tool-using LLM agents for the damage they do, read from database state over many runs.

The public API (pinned by tests/test_public_api.py)::

    import agentrel

    outcome = agentrel.audit(["reference/stochastic"], k=8, tasks=["itsm-*"], results="results/demo")
    request = agentrel.AuditRequest(models=("reference/stochastic",), k=8, conditions=("clean", "noisy"))
    outcome = agentrel.audit(request)                    # every option of `agentrel audit` is a field
    results = agentrel.load_results("results/demo")      # typed records + data frames
    report = agentrel.analyze(results)                   # every estimate the report shows
    verdict = agentrel.label("spec.dmg", "before.jsonl.gz", "after.jsonl.gz")
    agentrel.publish("results/demo")                     # after `agentrel protocol freeze`
    agentrel.compare("a/scorecard.json", "b/scorecard.json")

`audit` works inside a running event loop (a notebook); `audit_async` awaits it. Names load lazily, so
`import agentrel` stays cheap. Everything else lives in the layer packages (`agentrel.dsl`,
`agentrel.sandbox`, `agentrel.harness`, `agentrel.analysis`) and may change between versions.
"""

from __future__ import annotations

import importlib
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

from agentrel.distribution import DISTRIBUTION as _DISTRIBUTION

__version__ = _version(_DISTRIBUTION)

# Public name -> the module that defines it.
_PUBLIC = {
    "AuditRequest": "agentrel.harness.run.request",
    "audit": "agentrel.harness.library",
    "audit_async": "agentrel.harness.library",
    "load_results": "agentrel.harness.library",
    "analyze": "agentrel.harness.library",
    "label": "agentrel.harness.library",
    "publish": "agentrel.harness.library",
    "compare": "agentrel.harness.library",
    "Results": "agentrel.harness.library",
    "RunRecord": "agentrel.harness.results.record",
    "ResultsDir": "agentrel.harness.results.directory",
    "Verdict": "agentrel.dsl.api",
    "UserError": "agentrel.harness.errors",
}

__all__ = [
    "AuditRequest",
    "Results",
    "ResultsDir",
    "RunRecord",
    "UserError",
    "Verdict",
    "__version__",
    "analyze",
    "audit",
    "audit_async",
    "compare",
    "label",
    "load_results",
    "publish",
]
assert set(__all__) == {"__version__", *_PUBLIC}

if TYPE_CHECKING:
    from agentrel.dsl.api import Verdict
    from agentrel.harness.errors import UserError
    from agentrel.harness.library import (
        Results,
        analyze,
        audit,
        audit_async,
        compare,
        label,
        load_results,
        publish,
    )
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.results.record import RunRecord
    from agentrel.harness.run.request import AuditRequest


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'agentrel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
