"""
What an operator runs and watches: starting and stopping (C{lifecycle},
C{systemd}, C{signals}), the logs (C{logs}), the Prometheus metrics
(C{metrics}) and the health check (C{health}).
"""
