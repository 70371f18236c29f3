"""Reads diagnosis bundles and normalises them into per-component tensors (one pure path)."""
