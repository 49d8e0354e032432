"""MCP servers as search backends: the session each worker process keeps with a server
(connection.py), a tool's answer as hits (results.py), the tool's arguments (arguments.py)
and the backend the engine sees (backend.py)."""
