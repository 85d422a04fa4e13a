"""C{python -m reviewsd.cli}: the C{reviewsd} command."""

from reviewsd.cli.command import main

if __name__ == "__main__":
    raise SystemExit(main())
