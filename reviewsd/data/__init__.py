"""
What is published, and nothing about how it is served: the records
(C{model}), reading and checking a data directory (C{loading}, C{overlay}),
the URL layout (C{links}), the documents rendered from the records
(C{documents}, C{openapi}), the search index (C{search}, C{mentions}) and
the immutable L{snapshot.Snapshot} that holds one generation of it all.

Nothing here imports the web, MCP, WebSub or operations layers: they read
what this package builds.
"""
