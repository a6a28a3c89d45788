"""Not a client: JSON over HTTP, a helper of the tests' applications.

JSON over HTTP for the tests' applications (sip_dial_out.py, sip_secure.py, sip_kamailio.py): a
POST or GET answered with its status, headers and JSON body, an HTTP error's included."""
import json
import ssl
import urllib.error
import urllib.request


def request(url: str, body: dict | None = None, method: str = "POST", context: ssl.SSLContext | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    made = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(made, timeout=10, context=context) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"{}")
