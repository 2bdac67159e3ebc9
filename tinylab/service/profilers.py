"""What the faces name of the profilers, read off the adapters' declarations when asked
(tinylab.profilers.registry.ADAPTERS), so that a face imports no adapter: the tools in order, their
settings (the CLI makes its flags of them) and the artifact viewers the Hotspots screen offers. A
tool added to the registry is in each list at once.
"""

from tinylab.profilers.base import Setting, Viewer
from tinylab.profilers.registry import names, settings, viewers

__all__ = ["Setting", "Viewer", "names", "settings", "viewers"]
