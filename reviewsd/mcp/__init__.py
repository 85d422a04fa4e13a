"""
The Model Context Protocol server at C{/mcp}: the JSON-RPC transport
resource with its sessions (C{transport}) and the tool registry that reads
the current snapshot (C{tools}).
"""
