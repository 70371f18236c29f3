"""vsandx: machine-learning diagnostics for VMware vSAN performance problems.

This package is the core vocabulary (fault ids, component kinds and ids, settings); the command line is
the `cli` package. It imports nothing else of ours.
"""

__version__ = "0.1.0"
