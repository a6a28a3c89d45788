import Server

/// What `GET /` shows until the browser voice client lands: where things are, and a live check
/// that a WebSocket to this server opens and echoes.
enum LandingPage {
    static let response = HTTPResponse(status: .ok, contentType: "text/html; charset=utf-8", body: html)

    private static let html = """
    <!doctype html>
    <html lang="en">
    <meta charset="utf-8">
    <title>Parley</title>
    <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}code{background:#eee;padding:0 .2em}</style>
    <h1>Parley is running</h1>
    <p>A WebSocket server for real-time voice and agent sessions. The browser voice client arrives
    with a later release; for now this server offers:</p>
    <ul>
    <li><code>/ws</code>: the session endpoint (placeholder answers until the session engine lands)</li>
    <li><code>/echo</code>: a WebSocket echo, for conformance tests and benchmarks</li>
    <li><a href="/metrics"><code>/metrics</code></a>: Prometheus metrics, memory per session included</li>
    <li><a href="/healthz"><code>/healthz</code></a>: health check</li>
    </ul>
    <p>WebSocket check: <strong id="check">connecting…</strong></p>
    <script>
    const check = document.getElementById("check");
    const ws = new WebSocket(location.origin.replace(/^http/, "ws") + "/echo");
    ws.onopen = () => ws.send("hello, Parley");
    ws.onmessage = (e) => { check.textContent = "open, echoed “" + e.data + "”"; ws.close(1000); };
    ws.onerror = () => { check.textContent = "failed: see the server's output"; };
    </script>
    </html>
    """
}
