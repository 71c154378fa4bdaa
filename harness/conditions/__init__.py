"""Conditions: what stands between the agent and the tools in a run, declared as data.

A condition is a name plus the layers it puts in the run's tool pipeline (`harness.run.pipeline`): `noisy`
(tool faults, `noise.py`) and `adversarial` (prompt-injection payloads, `injection.py`). The clean
condition has none. A condition's declaration is part of the manifest, so of the protocol hash; nothing
in the agents knows about conditions.
"""
