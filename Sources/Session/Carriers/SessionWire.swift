import Server
import SessionEngine

/// A session's two sides, as its driver sees them: the API's dialect (`send(ServerEvent)`: the
/// Realtime API's JSON events in the client's dialect, GPT-Live's) and the carrier's media, which
/// it refines (`MediaLeg`). A WebSocket's session handler is both; a call's conversation
/// (`CallConversation`) is the dialect and hands the media to its call's leg.
package protocol SessionWire: MediaLeg {
    /// What the session writes for `event` (nothing, for events the wire does not carry).
    func send(_ event: ServerEvent, on socket: any SessionSocket)
    /// Names the endpoint in the session's log lines.
    var endpointName: String { get }
}
