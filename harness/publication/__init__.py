"""Publication integrity: a score exists only as a typed object built from an eligibility proof.

    manifest.json ─► identity (matrix, policy, evaluator, witness contracts ─► protocol hash)
    freeze.json   ─► the protocol bound before the measured runs
    runs.jsonl    ─► evidence (facts per record, Merkle evidence root) ─► validate ─► EligibilityProof
                         eligible ─► PublishableScorecard (scorecard.json/.md/.html, registered)
                         not      ─► IncompleteEvidenceReport (evidence_report.json/.md, no number)

Modules, one job each: `canonical` (RFC 8785 bytes and hashes), `policy` (+ policy.json), `evaluator`
(the source digest), `identity`, `freeze`, `cells` (the registered cell set), `evidence` (facts and the
evidence root), `matrix_check` and `eligibility` (the pure validator and its proof), `reasons`,
`scorecard`, `evidence_report`, `render`, `artifacts` (files behind the records), `schemas` (+ schemas/),
`publish` (the only I/O around them). `environment`, `registry` and `compare` are their own; the
registry is signed (`signing`: the publisher's Ed25519 key; `registry_model`: its entries, parsed and
folded; `registry_head`: the signed head that catches a cut), and `anchor` checks that the freeze was
anchored there before the runs.
"""
