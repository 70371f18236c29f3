"""Labelled data: the fault-injection simulator, dataset building and storage."""
