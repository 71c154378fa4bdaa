"""Publication integrity: a score exists only as a typed object built from an eligibility proof.

    identity + freeze (harness.protocol) ─► the protocol the audit ran under
    runs.jsonl ─► evidence (facts per record, Merkle evidence root) ─► validate ─► EligibilityProof
                     eligible ─► PublishableScorecard (scorecard.json/.md/.html, registered)
                     not      ─► IncompleteEvidenceReport (evidence_report.json/.md, no number)

Modules, one job each: `cells` (the registered cell set), `evidence` (facts and the evidence root),
`rederive`, `matrix_check` and `eligibility` (the pure validator and its proof), `reasons`, `scorecard`,
`evidence_report`, `render`, `artifacts` (files behind the records), `schemas` (+ schemas/), `anchor`
(the freeze was anchored before the runs), `compare` and `publish` (the only I/O around them).
"""
