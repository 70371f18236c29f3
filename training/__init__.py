"""Offline training: datasets, sweeps, tracking, selection."""
