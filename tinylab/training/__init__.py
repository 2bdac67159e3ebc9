"""The trainer process: the training loop and what it needs (data, parallel engines, markers, FLOPs, faults)."""
