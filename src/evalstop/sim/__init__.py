"""Discrete-event simulator of a shared GPU cluster."""
