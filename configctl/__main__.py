"""``python -m configctl`` runs the command line."""

from configctl.cli.main import main

if __name__ == "__main__":
    main()
