"""Agents: the protocol the runner drives (`protocol`: manifests, the `Agent` hooks, the task
an agent is told), the tool API (`tools`, with its page `actions`, the `targets` elements are
named by and the `trajectory` each call is recorded in), the tool specs a model is offered
(`tool_specs`, derived from the tool API), and the adapters (`adapters`; `stream_capture`
keeps what the command adapter's process printed)."""
