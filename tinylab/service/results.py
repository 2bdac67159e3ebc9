"""The frozen typed results the Lab hands the faces, named here so that a face's annotations
import no tinylab.analysis: a comparison of two runs, a kernel table's hotspot summary, a step's
timeline and a roofline placement (the doctor's report is tinylab.service.doctor's). Each has the `to_json()` its command's
--json prints; tinylab.render lays them out as text.

Importing this is cheap (no pandas, no torch).
"""

from tinylab.analysis.compare import Comparison
from tinylab.analysis.hotspots_result import HotspotSummary, KernelDiff
from tinylab.analysis.roofline import Placement
from tinylab.analysis.timeline_result import Timeline

__all__ = ["Comparison", "HotspotSummary", "KernelDiff", "Placement", "Timeline"]
