"""``python -m suanli``: the same as the ``suanli`` command."""

from suanli.cli.main import main

main()
