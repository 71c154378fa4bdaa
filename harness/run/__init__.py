"""The run lifecycle: one audit, its matrix, batches of attempts, one run's session and tool pipeline."""
