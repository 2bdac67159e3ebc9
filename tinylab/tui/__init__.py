"""The Textual lab (`tinylab` with no command). The only package of tinylab that imports Textual."""
