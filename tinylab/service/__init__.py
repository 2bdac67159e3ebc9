"""The headless core: the use cases the CLI (tinylab/commands) and the lab (tinylab/tui) share.

`Lab` (lab.py) is their one door; launch.py holds every pre-launch check, exercise.py runs an
exercise step as a generator of progress events, machine.py says what the machine offers a run.
Nothing here imports Textual or tinylab.commands.
"""
