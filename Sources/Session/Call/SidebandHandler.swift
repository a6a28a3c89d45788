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
        let remote = socket.loop.handle, id = ObjectIdentifier(self), handed = Handoff(socket), call = entry.call
        entry.home.execute { call.value.attach(sideband: handed, on: remote, id: id) }
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        // Events only: a call's audio is on its media track.
        guard kind == .text else { return socket.close(.unsupportedData, reason: "the sideband carries JSON events only") }
        let text = String(decoding: message, as: UTF8.self), call = entry.call
        entry.home.execute { call.value.receive(sidebandText: text) }
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {
        let id = ObjectIdentifier(self), call = entry.call
        entry.home.execute { call.value.detach(sideband: id) }
    }
}

/// A call's socket as its session sees it: the call itself (events on its data channel, audio on
/// its track) and any sideband WebSockets, which get the events too.
final class CallSocket: SessionSocket {
    let call: any SessionSocket
    var sidebands: [ObjectIdentifier: RelayedSocket] = [:]

    init(_ call: any SessionSocket) { self.call = call }

    var loop: EventLoop { call.loop }
    func send(text: String) {
        call.send(text: text)
        for sideband in sidebands.values { sideband.send(text: text) }
    }
    func send(binary: [UInt8]) { call.send(binary: binary) }
    func close(_ code: WebSocketCloseCode, reason: String) {
        call.close(code, reason: reason)
        closeSidebands()
    }
    func closeSidebands() {
        for sideband in sidebands.values { sideband.close(.normal, reason: "the call ended") }
        sidebands = [:]
    }
    var isOpen: Bool { call.isOpen }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { call.account(handlerBytes: handlerBytes) }
}
