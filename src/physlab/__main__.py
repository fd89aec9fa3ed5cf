"""`python -m physlab` and the `physlab` console script.

Importing the command line takes a moment (every capability registers its commands; their
machinery loads with the command that runs); a Ctrl-C in that time ends with the same one line and
exit code as a Ctrl-C later, not with a traceback of the import under way.
"""

import sys


def main() -> None:
    try:
        from physlab.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    cli_main()


if __name__ == "__main__":
    main()
