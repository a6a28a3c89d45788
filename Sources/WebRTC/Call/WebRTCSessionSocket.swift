import Loop
import Server
import Session

/// A call's socket as its session sees it: the call itself (events on its data channel, audio on
/// its track) and any sideband WebSockets, which get the events too.
final class WebRTCSessionSocket: SessionSocket {
    let call: any SessionSocket
    var sidebands = CallSidebands()

    init(_ call: any SessionSocket) { self.call = call }

    var loop: EventLoop { call.loop }
    func send(text: String) {
        call.send(text: text)
        sidebands.send(text: text)
    }
    func send(binary: [UInt8]) { call.send(binary: binary) }
    func close(_ ending: SessionEnding, reason: String) {
        call.close(ending, reason: reason)
        sidebands.closeAll()
    }
    var isOpen: Bool { call.isOpen }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { call.account(handlerBytes: handlerBytes) }
}
