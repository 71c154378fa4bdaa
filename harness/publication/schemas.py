"""The JSON schemas of the publication objects, shipped in `schemas/` beside this module.

Consumers outside Python validate scorecards, reports, proofs and freezes against these files; a test
keeps them equal to what the models generate. After changing a model: `python -m
harness.publication.schemas` rewrites them (they are evaluator files, so the evaluator digest moves).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from agentrel.analysis.claims import ClaimsFile
from agentrel.harness.protocol.freeze import Freeze
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.publication.eligibility import EligibilityProof
from agentrel.harness.publication.evidence_report import IncompleteEvidenceReport
from agentrel.harness.publication.scorecard import PublishableScorecard

__all__ = ["SCHEMAS", "SCHEMA_DIR", "generated", "write"]

SCHEMA_DIR = Path(__file__).with_name("schemas")
SCHEMAS: dict[str, type[BaseModel]] = {
    "eligibility_proof.schema.json": EligibilityProof,
    "freeze.schema.json": Freeze,
    "claims.schema.json": ClaimsFile,
    "incomplete_evidence_report.schema.json": IncompleteEvidenceReport,
    "policy.schema.json": Policy,
    "publishable_scorecard.schema.json": PublishableScorecard,
}


def generated() -> dict[str, bytes]:
    return {
        name: (
            json.dumps(model.model_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        ).encode()
        for name, model in SCHEMAS.items()
    }


def write(folder: Path = SCHEMA_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, data in generated().items():
        (folder / name).write_bytes(data)
        out.append(folder / name)
    return out


if __name__ == "__main__":
    for path in write():
        print(path)
