"""The service: what calling systems reach over HTTP (`tht serve`) and MCP.

`operations` is transport-agnostic (plain dicts in and out, the engine opened once per
process); `callers` authenticates calling systems and applies their label ceiling; `http` is
the FastAPI application. Nothing here keeps state a second process would need: several
`tht serve` processes share the state store and the index.
"""
