"""The service: what calling systems reach over HTTP (`tht serve`) and MCP."""
