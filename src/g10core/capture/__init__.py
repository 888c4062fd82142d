"""Capture of PyTorch training iterations as g10core traces."""
