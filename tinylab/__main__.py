"""`python -m tinylab`: the CLI, never importing the caller's own `exercises/`, `models/` or `kernels/`.

`python -m` puts the current folder first on sys.path, where a learner's project may hold packages
named like tinylab's top-level ones (exercises, models, kernels): imported later by name, theirs
would run inside tinylab. That folder is dropped unless it is the one tinylab itself comes from
(a checkout run in place). The `tinylab` script has no such entry.
"""

import os
import sys

_home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd()) \
        and os.path.realpath(sys.path[0]) != os.path.realpath(_home):
    del sys.path[0]

from tinylab.cli import main  # noqa: E402

raise SystemExit(main())
