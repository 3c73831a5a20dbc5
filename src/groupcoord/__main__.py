"""`python -m groupcoord`: the command line entry point."""

from groupcoord.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
