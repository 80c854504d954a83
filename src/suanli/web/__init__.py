"""``suanli serve``: a local web page and JSON API over the same library as the CLI.

FastAPI and uvicorn (the ``[web]`` extra) are imported only by :mod:`suanli.web.app`.
"""
