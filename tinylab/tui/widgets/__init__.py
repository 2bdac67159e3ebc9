"""Widgets shared by the lab's screens."""
