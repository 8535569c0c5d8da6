"""The harness: the runner that owns the browser for every run (guard, probes, capture,
observation), environment profiles, telemetry and the one builder every caller uses.
"""
