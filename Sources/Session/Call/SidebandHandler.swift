import Loop
import Server

/// OpenAI's sideband: a server's WebSocket on `/v1/realtime?call_id=…` attached to a WebRTC call's
/// session, on whatever loop it arrived. It gets every event the call's data channel gets, and its
/// client events go into the same session (a server adding tools or instructions to a browser's
/// call without the browser holding them). Closing it leaves the call as it was.
final class SidebandHandler: WebSocketHandler {
    private let entry: CallDirectory.Entry

    init(_ entry: CallDirectory.Entry) { self.entry = entry }

    func webSocketDidOpen(_ socket: WebSocket) {
        let remote = socket.loop.handle, id = ObjectIdentifier(self), handed = Handoff(socket), line = entry.line
        entry.home.execute { line.value.attach(sideband: handed, on: remote, id: id) }
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        // Events only: a call's audio is on its media track.
        guard kind == .text else { return socket.close(.unsupportedData, reason: "the sideband carries JSON events only") }
        let text = String(decoding: message, as: UTF8.self), line = entry.line
        entry.home.execute { line.value.receive(sidebandText: text) }
    }

    /// A drain leaves a sideband to its call: calls go on through a drain, and at its bound the
    /// call's end closes the sideband with how it ended (`the call ended: drained`). Closed at the
    /// drain's start, it lost the rest of a call that went on (make chaos, 2026-11-28).
    func webSocketDrain(_ socket: WebSocket) -> Bool { true }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {
        let id = ObjectIdentifier(self), line = entry.line
        entry.home.execute { line.value.detach(sideband: id) }
    }
}
