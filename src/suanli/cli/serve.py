"""``suanli serve``: the local web page (``suanli.web``) on 127.0.0.1 by default."""

from __future__ import annotations

import ipaddress

import click

from suanli.errors import MissingExtra

#: The web app's factory, as uvicorn finds it (``suanli.web.app.create_app``).
APP_FACTORY = "suanli.web.app:create_app"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback exposes the page to the network.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=False,
    show_default=True,
    help="Open the page in the default browser.",
)
def serve_cmd(host: str, port: int, open_browser: bool) -> None:
    """A local web page: the plan, memory, speed and cost as charts, updated as you type.

    Every chart and table comes from the same library as the CLI (JSON API under /api,
    OpenAPI docs at /docs). Needs the web extra: pip install 'suanli[web]'.
    """
    from importlib.util import find_spec

    try:
        import uvicorn

        web_extra = find_spec("fastapi") is not None
    except ImportError:
        web_extra = False
    if not web_extra:
        raise MissingExtra("suanli serve needs the web extra: pip install 'suanli[web]'")
    if not is_loopback(host):
        click.echo(
            f"warning: listening on {host}, not loopback: anyone who can reach this machine "
            "can use the page and its API (there is no authentication)",
            err=True,
        )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    url = f"http://{shown}:{port}/"
    click.echo(f"suanli serve: {url} (API docs at {url}docs; Ctrl-C to stop)", err=True)
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    # The app is named, not imported: the CLI and the web front-end never import each other.
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="warning")
