"""The run store's words for the faces, so that they import nothing of tinylab.runs but its
typed records: the statuses a run can have, the handle of one run, following its output to the
end (and the log lines left out of it), what a Slurm job asks for, and the steps a counter pass
trains.
"""

from tinylab.runs.follow import EXIT_CODES, follow, noise, watch
from tinylab.runs.passes import window_steps
from tinylab.runs.slurm import CONFIG_KEYS as SLURM_CONFIG_KEYS
from tinylab.runs.slurm import JobRequest, check_size, default_config_path
from tinylab.runs.store import LIVE, STATUSES, TERMINAL, Run

__all__ = ["EXIT_CODES", "LIVE", "SLURM_CONFIG_KEYS", "STATUSES", "TERMINAL", "JobRequest", "Run", "check_size",
           "default_config_path", "follow", "noise", "watch", "window_steps"]
