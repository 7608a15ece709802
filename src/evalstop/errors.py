"""The one exception type that the CLI turns into a one-line error and a non-zero exit."""


class InputError(ValueError):
    """Bad user input (a file, a column, a spec): the message names the problem."""
