"""Errors the command line reports as one line."""


class UsageError(Exception):
    """Bad input from the user: reported as one line with exit status 2."""
