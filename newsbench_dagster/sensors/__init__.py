"""Sensors. The agent-version sensor (one `agent_version` partition per new manifest) arrives
with the release path; the skeleton's runs are scheduled (`schedules.py`)."""

SENSORS: list = []
