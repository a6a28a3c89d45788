import JSON
import Loop
import Server
import SessionEngine

/// A call that may be reached from outside its own transport, by its id (`CallDirectory`): a
/// WebRTC call or a SIP call. Sideband WebSockets (`/v1/realtime?call_id=…`) attach to its session,
/// and call control (`POST /v1/realtime/calls/{id}/accept|reject|refer|hangup`) acts on it. Every
/// method runs on the call's own loop.
package protocol DirectedCall: AnyObject {
    /// A sideband WebSocket (on `remote`'s loop) gets the session's events from now on.
    func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier)
    func detach(sideband id: ObjectIdentifier)
    /// A client event from a sideband, as text.
    func receive(sidebandText: String)
    func control(_ action: CallControl)
}

/// What OpenAI's call-control endpoints ask of a call.
package enum CallControl: Sendable {
    /// `/accept` with the session to run it with (a SIP call waiting for its webhook's answer).
    case accept(SessionUpdate?)
    /// GPT-Live's `/accept` (`POST /v1/live/sessions/{id}/accept`): a Live session for the call.
    case acceptLive(LiveSessionConfig)
    /// `/reject` with the SIP status to refuse it with (603 unless said).
    case reject(status: Int)
    /// `/refer`: transfer the call to `target` (a `tel:` or `sip:` URI) with a SIP REFER.
    case refer(target: String)
    case hangUp
}
