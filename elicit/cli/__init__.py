"""The ``elicit`` command line: argument parsing only; the work is in library functions."""
