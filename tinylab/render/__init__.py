"""Text for people, shared by the faces: the CLI's tables, the reports (markdown, HTML, SVG) and
what the lab lays out. Each module renders the typed results of tinylab.analysis (and the run
records); none computes a number of its own or reads a file a result does not name.
"""
