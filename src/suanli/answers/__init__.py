"""The application layer: one module per question, each a typed request in and a typed answer out.

The CLI, the web page and ``import suanli`` call these functions and only render their results;
an answer's ``to_json()`` is the JSON document every front-end serves (docs/schemas/). Modules here
never print, never format for humans and never import click, rich or FastAPI.
"""
