"""Fault-injection simulator that writes realistic, labelled vSAN diagnosis bundles."""
