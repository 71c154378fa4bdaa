"""The fault path: a run's tools in a separate server process behind a loopback proxy the harness controls,
so a restart, a lost response, a SIGKILL mid-call and a partition really happen, each with an actuator
receipt and a witness read from somewhere the actuator does not control.

    client (RemoteTools) ──► FaultProxy (127.0.0.1) ──► tool server process ──► run database
                                  │ counters                 │ boot id, pid        │ call_commits
                                  └────────── witnesses read these, the kernel and Postgres ──┘

Modules: `wire` (the tiny HTTP/1.1 framing all three share), `server` (the tool server process),
`process` (starting, stopping and killing it), `client` (RemoteTools), `proxy` (FaultProxy),
`receipts` (pydantic receipts, pure verdicts, ReceiptLog), `injectors` (the four faults and their
no-op twins), `selftest` (`agentrel faults selftest`).
"""
