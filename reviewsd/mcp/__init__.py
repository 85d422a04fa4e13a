"""
The Model Context Protocol server at C{/mcp}, in both eras: C{transport}
(the HTTP resource: which era a message is in, its headers, origins),
C{protocol} (revisions, error codes, envelopes), C{methods} (each method's
answer and caching hints), C{sessions} (legacy session ids any instance
verifies), C{tools}, C{schema}, C{resources}, C{prompts}, C{completion},
and C{subscriptions} (the event streams each reload is told to).
"""
