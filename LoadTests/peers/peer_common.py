"""What every Python peer server shares: its command-line checks and its descriptor limit."""

from __future__ import annotations

import argparse
import ipaddress
import resource
import sys

MAX_MESSAGE = 1 << 20  # 1 MiB, as Parley's default


def loopback_host(value: str) -> str:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an IP address (loopback only: 127.0.0.0/8 or ::1)")
    if not address.is_loopback:
        raise argparse.ArgumentTypeError(f"{value} is not a loopback address (127.0.0.0/8 or ::1 only)")
    return value


def port_number(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number")
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535; 0 picks a free one)")
    return port


def raise_nofile_limit(name: str) -> None:
    """Raises the open-files soft limit to the hard limit: each connection is a descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as error:
        print(f"{name}: could not raise the open-files limit from {soft} to {hard}: {error}", file=sys.stderr, flush=True)


def listening_line(name: str, host: str, port: int, pid: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{name} listening on http://{shown}:{port}/ (pid {pid})"
