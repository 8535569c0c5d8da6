"""Sensors: the agent registry (`agent_registry.py`)."""

from newsbench_dagster.sensors.agent_registry import agent_registry

SENSORS = [agent_registry]
