import Server
import Session

/// What a WebRTC call carries for: a Realtime session (`WebRTCSession`, `POST /v1/realtime/calls`)
/// or a GPT-Live one (`LiveWebRTCSession`, `POST /v1/live/sessions`). The call hands it the data
/// channel's messages and the caller's Opus packets; it writes back through the call as its socket.
package protocol WebRTCCallSession: DirectedCall {
    var sessionID: String { get }
    /// The data channel is open: the session runs on `call`.
    func open(_ call: any SessionSocket)
    /// A text message on the data channel.
    func receive(text: UnsafeRawBufferPointer)
    /// One 20 ms Opus packet of the caller's, in playout order.
    func receive(opus packet: UnsafeRawBufferPointer)
    /// A packet that did not come in time (recovered from `next`'s FEC, or concealed).
    func lost(next: UnsafeRawBufferPointer?)
    /// The call is over: the session ends.
    func ended(_ ending: SessionEnding)
    /// What ends the call's transport, for a hangup that came from outside it.
    var onHangUp: (() -> Void)? { get set }
}

extension WebRTCSession: WebRTCCallSession {}
