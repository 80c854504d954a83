"""``suanli serve``: the local web page (``suanli.web``) on 127.0.0.1 by default."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

import click

from suanli.cli.types import IntRange
from suanli.errors import MissingExtra
from suanli.i18n import N_, _
from suanli.limits import SERVER_ACCEPT_BURST

#: The web app's factory, as uvicorn finds it (``suanli.web.app.create_app``).
APP_FACTORY = "suanli.web.app:create_app"
#: uvicorn's h11 protocol answering malformed HTTP with the API's JSON error.
HTTP_PROTOCOL = "suanli.web.protocol:JSONErrorH11Protocol"


#: The variable the app factory reads the allow-list from (suanli.web.security.ALLOW_HOSTS_ENV;
#: not imported: the CLI and the web front-end never import each other).
ALLOW_HOSTS_ENV = "SUANLI_ALLOW_HOSTS"


def check_port_free(host: str, port: int) -> None:
    """One sentence (exit 2) when ``host:port`` cannot be bound, before uvicorn tries."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                message = N_("port {port} on {host} is in use; pick another with --port")
            else:
                message = N_(
                    "port {port} on {host} cannot be used ({reason}); pick another with --port"
                )
            raise ValueError(message.format(port=port, host=host, reason=exc.strerror)) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@click.command(
    "serve",
    help=N_(
        "A local web page: the plan, memory, speed and cost as charts, updated as you type.\n"
        "\n"
        "Every chart and table comes from the same library as the CLI (JSON API under /api, "
        "OpenAPI docs at /docs). Needs the web extra: pip install 'suanli[web]'."
    ),
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help=N_("Address to listen on. Anything but loopback exposes the page to the network."),
)
@click.option("--port", type=IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help=N_(
        "Also answer requests addressed to this host name (repeatable); by default only "
        "localhost, 127.0.0.1 and [::1] (a guard against DNS rebinding). '*' turns the check off."
    ),
)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=False,
    show_default=True,
    help=N_("Open the page in the default browser."),
)
def serve_cmd(host: str, port: int, allow_hosts: tuple[str, ...], open_browser: bool) -> None:
    """``suanli serve``: its help is the ``help=`` above (translated with --lang zh)."""
    from importlib.util import find_spec

    try:
        import uvicorn

        web_extra = find_spec("fastapi") is not None
    except ImportError:
        web_extra = False
    if not web_extra:
        raise MissingExtra(N_("suanli serve needs the web extra: pip install 'suanli[web]'"))
    if not is_loopback(host):
        click.echo(
            _(
                "warning: listening on {host}, not loopback: anyone who can reach this machine "
                "can use the page and its API (there is no authentication)"
            ).format(host=host),
            err=True,
        )
    check_port_free(host, port)
    names = list(allow_hosts)
    if not is_loopback(host) and host not in ("0.0.0.0", "::", ""):
        names.append(host)  # the address it was asked to listen on is a name it answers to
    os.environ[ALLOW_HOSTS_ENV] = ",".join(names) if names else " "
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    url = f"http://{shown}:{port}/"
    click.echo(
        _("suanli serve: {url} (API docs at {url}docs; Ctrl-C to stop)").format(url=url), err=True
    )
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    raise_open_file_limit()
    # The app is named, not imported: the CLI and the web front-end never import each other.
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        log_level="warning",
        http=HTTP_PROTOCOL,
        # Idle keep-alive connections close after 5 s; the protocol closes clients that send no
        # request and sheds idle ones under its connection cap. asyncio accepts up to a whole
        # backlog of connections at once, before any of them can be shed: the backlog is the
        # burst the cap leaves room for (web/protocol.py, ACCEPT_BURST; docs/security.md).
        timeout_keep_alive=5,
        backlog=SERVER_ACCEPT_BURST,
    )


def raise_open_file_limit() -> None:
    """Raise the soft open-file limit to the hard one (a desktop's 1,024 is a few hundred idle
    clients away from "Too many open files"); the server sheds connections below it."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, OSError, ValueError):
        pass  # not POSIX, or not allowed: the protocol's cap follows the limit in force
