"""`python -m voyage_connect subscribe|sign-in`: the SDK as a command for people and scripts.

stdout: one JSON object per line; stderr: one line per progress message or problem.
Exit status: 0 after a completed sign-in or a close (SIGINT, SIGTERM), 1 for an error (its hint
on stderr), 2 for a wrong command line. The client secret comes from VOYAGE_CLIENT_SECRET.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any, NoReturn
from urllib.parse import urlsplit

from .client_credentials import ClientCredentials
from .connection import Notification
from .errors import VoyageError
from .stores import FileStore, MemoryStore, Store
from .subscriber import TRANSPORTS, Subscriber
from .user_tokens import UserTokens

SECRET_VARIABLE = "VOYAGE_CLIENT_SECRET"


def say(line: str) -> None:
    """One line of progress on stderr."""
    print(line, file=sys.stderr, flush=True)


def retrying(problem: str, seconds: float) -> None:
    """A temporary failure a call waits out, on one line of stderr."""
    say(f"{problem}; trying again in {seconds:.1f} s")


def emit(value: dict[str, Any]) -> None:
    """One JSON object on a line of stdout, flushed: a pipe gets each as it comes."""
    sys.stdout.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n")
    sys.stdout.flush()


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(prog="python -m voyage_connect", description="voyage-connect device commands")
    commands = command.add_subparsers(dest="command", required=True, metavar="subscribe|sign-in")

    subscribe = commands.add_parser("subscribe", help="print the client's notifications, one JSON line each")
    subscribe.add_argument("--api", required=True, metavar="URL", help="the service's address")
    subscribe.add_argument("--client-id", required=True, metavar="ID")
    subscribe.add_argument("--transport", choices=TRANSPORTS, default="auto", help="default auto: v2, SSE when a proxy refuses WebSocket")
    subscribe.add_argument("--state", metavar="FILE", help="keep tokens and the position here: a restart resumes without loss or repeats")

    sign_in = commands.add_parser("sign-in", help="sign a user in through the helper flow and print the tokens")
    sign_in.add_argument("--api", required=True, metavar="URL", help="the service's address")
    sign_in.add_argument("--client-id", required=True, metavar="ID")
    sign_in.add_argument("--redirect-port", type=int, metavar="P", help="receive the code at http://HOST:P/callback (0: a free port)")
    sign_in.add_argument("--redirect-host", metavar="H", help="the callback's host (default 127.0.0.1)")
    sign_in.add_argument("--scope", metavar="S", help="the scopes to ask for, space-separated")
    return command


def usage_error(command: argparse.ArgumentParser, message: str) -> NoReturn:
    command.error(message)  # exits 2, as argparse does for its own errors


async def subscribe(options: argparse.Namespace, secret: str) -> int:
    store: Store = FileStore(options.state) if options.state else MemoryStore()
    async with ClientCredentials(options.api, options.client_id, secret, store=store, on_retry=retrying) as tokens:
        subscriber = Subscriber(
            options.api,
            tokens,
            transport=options.transport,
            store=store,
            on_connected=lambda transport: say(f"connected ({'server-sent events' if transport == 'sse' else f'protocol {transport}'})"),
            on_reconnecting=lambda delay, why: say(f"{why}; reconnecting in {delay:.1f} s"),
            on_error=lambda error: say(str(error)),
        )
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, lambda: asyncio.ensure_future(subscriber.close()))
        async with subscriber:
            async for item in subscriber:
                if isinstance(item, Notification):
                    emit({"notification": item.notification} if item.seq is None else {"seq": item.seq, "notification": item.notification})
                else:
                    emit({"reset": item.reason})
    say("closed by request")
    return 0


async def sign_in(options: argparse.Namespace, secret: str | None) -> int:
    def show(address: str) -> None:
        say(f"Open this address in a browser and sign in: {address}")
        host = (urlsplit(address).hostname or "").lower()
        if loopback(host):
            say(
                f"note: {host} is this machine only: a phone or another computer cannot open it."
                " Set the service's FRONTEND_URL (and API_URL) to an address they reach."
            )
        if options.redirect_port is not None or options.redirect_host is not None:
            redirect_host = options.redirect_host or "127.0.0.1"
            if loopback(redirect_host):
                say(
                    f"note: the browser is sent back to {redirect_host}: sign in on this machine,"
                    " or give --redirect-host this device's address on the network."
                )
        qr_code(address)

    async with UserTokens(options.api, options.client_id, secret, on_retry=retrying) as tokens:
        result = await tokens.sign_in_with_helper(
            redirect_port=options.redirect_port, redirect_host=options.redirect_host, scope=options.scope, on_address=show
        )
    say("signed in")
    emit(dict(result))
    return 0


def loopback(host: str) -> bool:
    """Whether `host` names this machine only."""
    host = host.lower().strip("[]")
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")


def qr_code(address: str) -> None:
    """A QR code of the address at a terminal, when the optional `qrcode` package is installed."""
    if not sys.stderr.isatty():
        return
    try:
        import qrcode  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return
    code = qrcode.QRCode(border=1)
    code.add_data(address)
    code.print_ascii(out=sys.stderr, invert=True)


def main(argv: list[str] | None = None) -> int:
    command = parser()
    options = command.parse_args(argv)
    if options.redirect_port is not None if options.command == "sign-in" else False:
        if not 0 <= options.redirect_port <= 65535:
            usage_error(command, "--redirect-port must be a port number (0: a free one)")
    if not options.api.startswith(("http://", "https://")):
        usage_error(command, "--api must be an http:// or https:// address")
    secret = os.environ.get(SECRET_VARIABLE) or None
    if options.command == "subscribe" and secret is None:
        usage_error(command, f"set {SECRET_VARIABLE} to the client's secret (client:create prints it)")
    try:
        if options.command == "subscribe":
            return asyncio.run(subscribe(options, secret or ""))
        return asyncio.run(sign_in(options, secret))
    except VoyageError as error:
        say(f"error: {error.message}" + (f". What to do: {error.hint}" if error.hint else ""))
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 1
    except Exception as error:  # anything else (an unreadable --state file…): one line, not a trace
        say(f"error: {type(error).__name__}: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
