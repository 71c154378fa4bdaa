"""The evaluator manifest is computed once per process even when an audit starts it on a thread of its own
(so it overlaps the sandbox's start) and the protocol asks for it while that thread is still hashing."""

from __future__ import annotations

import threading

from agentrel.harness.protocol import evaluator


def test_a_caller_waits_for_the_computation_under_way_and_never_repeats_it(monkeypatch):
    calls: list[str] = []
    started, release = threading.Event(), threading.Event()
    real = evaluator.evaluator_manifest()

    def slow_manifest() -> evaluator.EvaluatorManifest:
        calls.append(threading.current_thread().name)
        started.set()
        release.wait(30)
        return real

    evaluator._current.cache_clear()
    monkeypatch.setattr(evaluator, "evaluator_manifest", slow_manifest)
    try:
        evaluator.start_evaluator_manifest()
        assert started.wait(30)
        got: list[evaluator.EvaluatorManifest] = []
        asker = threading.Thread(target=lambda: got.append(evaluator.current_evaluator_manifest()))
        asker.start()
        release.set()
        asker.join(30)
        assert got == [real] and evaluator.current_evaluator_digest() == real.digest
        assert calls == ["evaluator-manifest"]  # the background thread's computation, used by both
    finally:
        evaluator._current.cache_clear()
