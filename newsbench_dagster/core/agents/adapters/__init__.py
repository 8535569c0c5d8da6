"""Agent adapters: one module per `adapter:` value of a manifest, each exposing
`create(manifest) -> Agent` (see `core.agents.protocol`).
"""
