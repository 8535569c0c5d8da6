"""Agents: the protocol the runner drives (manifests, the `Agent` hooks, the task an agent
is told), the tool API, and the adapters (`core.agents.adapters`)."""
