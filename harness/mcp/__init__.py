"""The task's tools served over MCP: to any MCP client (`mcp serve`), to one run's agent program, on stdio."""
