"""C{python -m reviewsd}: the C{reviewsd} command (the daemon is C{twistd reviewsd})."""

from reviewsd.cli.command import main

if __name__ == "__main__":
    raise SystemExit(main())
