"""The one exception type for user mistakes: the CLI prints its message on one line, no traceback."""


class UserError(Exception):
    """Bad input from the user (a flag, a run id, a file). Exit code 2."""

    exit_code = 2
