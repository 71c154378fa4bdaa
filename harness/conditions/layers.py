"""The pipeline layers a condition puts in front of one run's tools, in their fixed order."""

from __future__ import annotations

from harness.conditions.model import Condition
from harness.conditions.noise import NoiseLayer
from harness.episode import PreparedTask
from harness.pipeline import Layer


def layers_for(condition: Condition, prepared: PreparedTask) -> list[Layer]:
    layers: list[Layer] = []
    if condition.noisy is not None:
        layers.append(NoiseLayer(condition.noisy, prepared.tools))
    return layers
