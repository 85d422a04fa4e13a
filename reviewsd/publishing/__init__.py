"""
Turning a data directory into the snapshot the service answers from: the
build that runs every renderer once per data change (C{build}), the service
that holds the current snapshot and reloads it (C{service}), and the
watcher that notices when the files change (C{watching}).
"""
