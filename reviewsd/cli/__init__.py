"""
The C{reviewsd} command (L{reviewsd.cli.command}): work on a data directory
without starting the daemon (which C{twistd reviewsd} runs).

    reviewsd check DIR [--json]
    reviewsd import --from google-api|csv --data DIR FILE...
"""
