"""Adversarial tests: every key exactly once, whatever the input, records or output hold."""
