"""vsandx: machine-learning diagnostics for VMware vSAN performance problems.

This package is the core vocabulary (fault ids, component kinds and ids, settings) and the CLI.
It imports nothing else of ours.
"""

__version__ = "0.1.0"
