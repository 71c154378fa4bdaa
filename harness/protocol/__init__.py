"""The protocol an audit runs under: what was asked (identity), bound before the measured runs (freeze),
in which execution environment, and anchored in the signed registry.

    manifest.json + policy.json + evaluator digest ─► identity (protocol hash)
    freeze.json   ─► the protocol bound before the measured runs, anchored in the registry
    environment   ─► the execution environment the audit measured in (conformance compares two)

Publication (`harness.publication`) reads all of it; nothing here imports publication.
"""
