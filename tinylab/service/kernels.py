"""What the faces name of kernels, so that they import nothing of tinylab.analysis or
tinylab.anatomy: the categories of a kernel table and the short name a column shows of a kernel
(tinylab.core.names); the Triton targets, IR stages and tunable launch parameters of the
kernel anatomy, the config fields that shape a kernel's launches and the config a study of them
starts from, the names of kernels/'s Triton kernels, and the anatomy's worker pool (a long-lived
face keeps one).
"""

from tinylab.core.categories import CATEGORIES
from tinylab.core.names import short_name, short_names
from tinylab.anatomy import TARGETS, Pool, tunable
from tinylab.anatomy.compile import STAGES
from tinylab.anatomy.launches import SHAPING_FIELDS, kernel_config, triton_kernel_names

__all__ = ["CATEGORIES", "SHAPING_FIELDS", "STAGES", "TARGETS", "Pool", "kernel_config", "short_name", "short_names",
           "triton_kernel_names", "tunable"]
