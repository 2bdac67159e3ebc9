"""The files the in-process profilers write in their folders (tinylab/profilers/pytorch.py and
proton.py), named once for the adapters, the trainer and the readers. A module of its own, free of
pandas: the profiler registry, the trainer and the Lab import it on their start paths."""

# the PyTorch profiler
TRACE = "trace.json.gz"
OPERATORS_CSV = "operators.csv"
MEMORY_TIMELINE = "memory_timeline.json.gz"
# proton
HATCHET = "proton.hatchet"
SESSION = "proton-session.json"
