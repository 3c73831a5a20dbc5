"""Shared test helpers: the broker subprocess, the Java client harness, client adapters."""
