"""`mcpgen serve`: serve a `Server` over Streamable HTTP from the command line.

    mcpgen serve examples/everything_server.py:server --port 8000     # http://127.0.0.1:8000/mcp
    mcpgen serve mypackage.server:build --host 0.0.0.0 --allow-origin https://app.example.com
    mcpgen serve mypackage.server:server --host 0.0.0.0 --workers 4   # 4 processes, one port

The target is `FILE_OR_MODULE:ATTR` (ATTR defaults to `server`; a function returning a `Server`
works too). Bound to a loopback address, the endpoint refuses other Host and Origin headers (DNS
rebinding protection); bound elsewhere, cross-origin requests need `--allow-origin`. Ctrl-C
stops it gracefully, with exit status 0.

It runs uvicorn's fastest installed stack (httptools and uvloop, which the `http` extra installs
where they have wheels; else h11 and asyncio). `--workers N` serves from N processes on one
socket (`workers.serve_workers`), each importing the target itself: the multi-worker command
(uvicorn's own `--workers` delays each response on asyncio, see there). Handshake-era sessions
stay in the worker that opened them; modern-era requests go to any worker.
"""

from __future__ import annotations

import click

from ..server.http.run import endpoint_url
from ..server.http.security import HttpSecurity


@click.command()
@click.argument("target")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to bind.")
@click.option("--path", default="/mcp", show_default=True, help="Path of the MCP endpoint.")
@click.option("--allow-host", "allowed_hosts", multiple=True, help="Another Host header to accept (repeatable).")
@click.option("--allow-origin", "allowed_origins", multiple=True, help="An Origin to accept (repeatable; * for any).")
@click.option("--log-level", default="info", show_default=True, help="uvicorn's log level.")
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log a line per request (off by default: it cuts the rate of short calls by a third or more).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Worker processes serving the one port (each imports the target).",
)
@click.option(
    "--healthcheck-timeout",
    default=30,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --workers: seconds a worker may take to answer the supervisor's health check before it is replaced.",
)
def serve(  # noqa: PLR0913  (click passes each option as an argument)
    target: str,
    host: str,
    port: int,
    path: str,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    log_level: str,
    access_log: bool,
    workers: int,
    healthcheck_timeout: int,
) -> None:
    """Serve FILE_OR_MODULE:ATTR (an mcpgen Server) over Streamable HTTP."""
    from ..server.http.workers import load_server

    try:
        server = load_server(target, notice=lambda text: click.echo(f"note: {text}", err=True))
    except ImportError as exc:
        raise click.ClickException(f"cannot import {target}: {exc}") from None
    except (LookupError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    security = HttpSecurity(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    click.echo(f"serving {server.info.get('name')} at {endpoint_url(host, port, path)}", err=True)
    try:
        if workers > 1:
            from ..server.http.workers import serve_workers

            serve_workers(
                target,
                workers,
                host=host,
                port=port,
                path=path,
                security=security,
                log_level=log_level,
                access_log=access_log,
                healthcheck_timeout=healthcheck_timeout,
            )
        else:
            server.run_http(host, port, path, log_level=log_level, access_log=access_log, security=security)
    except (ImportError, OSError) as exc:  # the extra is missing; the address is taken
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:  # a Ctrl-C outside uvicorn's own handling: stopping is what was asked
        pass
    click.echo("stopped", err=True)
