"""Not a client: what the Python checkers of scripts/tests share.

What the Python checkers of scripts/tests share (realtime_sdk_client.py, agents_sdk_client.py,
otlp_trace_check.py): one line per check, `ok`/`FAIL`/`note`, and the counts for the last line and
the exit status."""
from __future__ import annotations

import threading


class Abort(Exception):
    """A step could not go on (a timeout, a closed connection): the rest of that run is skipped."""


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self._lock = threading.Lock()  # checks come from a test's threads too

    def check(self, label: str, ok: bool, detail: str = "") -> bool:
        with self._lock:
            if ok:
                self.passed += 1
                print(f"ok   {label}" + (f" ({detail})" if detail else ""), flush=True)
            else:
                self.failed += 1
                print(f"FAIL {label}" + (f": {detail}" if detail else ""), flush=True)
        return ok

    def note(self, text: str) -> None:
        print(f"note {text}", flush=True)
