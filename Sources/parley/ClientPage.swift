import CClientPage
import Server

/// The browser voice client, served at `/`: one page, no build step, nothing fetched from anywhere
/// but this server. Where the browser has `RTCPeerConnection` it makes a WebRTC call
/// (`POST /v1/realtime/calls`, with a client secret: minted with `{}` on a server without keys, or
/// the `#key=` it was opened with): the microphone goes out with the browser's own echo
/// cancellation, the reply comes back on the call's audio track into an `<audio>` element, and the
/// events on the `oai-events` data channel. `/?transport=ws`, or an offer that fails, uses the
/// WebSocket instead: the microphone encoded to Opus with WebCodecs (16 kHz, 20 ms frames, as the
/// server listens), each packet a binary message on `/ws`, the reply's Opus packets decoded with
/// WebCodecs. Either way it shows the connection, a live input level, the user's words as the server
/// recognises them and the reply as it streams, and stops the reply when the user speaks again. The
/// WebSocket session is resumable (it reconnects with the token and the last event's seq and carries
/// on, docs/operations.md); a WebRTC call is not, and the page says so when one drops.
/// `/?autostart=1` connects and listens without a click.
///
/// Its files are Sources/CClientPage/page/ (index.html, which loads client.css and client.js),
/// compiled into the executable (`#embed`, Sources/CClientPage/ClientPage.c): served from memory,
/// the same bytes wherever `parley` is run from, with nothing to install beside it.
enum ClientPage {
    /// Each file's path, content type and bytes; `no-cache`, as the page always was, so that a
    /// browser never runs one build's script against another build's page.
    static let files: [(path: String, response: HTTPResponse)] = [
        ("/", response("text/html; charset=utf-8", parley_page_html())),
        ("/client.js", response("text/javascript; charset=utf-8", parley_page_js())),
        ("/client.css", response("text/css; charset=utf-8", parley_page_css())),
    ]

    static func install(on routes: inout Router.Builder) {
        for (path, response) in files { routes.get(path) { _ in response } }
    }

    private static func response(_ contentType: String, _ file: parley_page_file) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: [("Content-Type", contentType), ("Cache-Control", "no-cache")],
                     body: Array(UnsafeBufferPointer(start: file.bytes, count: file.count)))
    }
}
