"""
The HTTP face: the site and its connection policy, conditional answers over
a snapshot's precomputed documents, the routes computed per request, JSON
errors, and the human-facing pages.
"""
