"""``python -m suanli``: the same as the ``suanli`` command."""

from suanli.cli.main import main

if __name__ == "__main__":  # importing this module (tools, multiprocessing) runs nothing
    main()
