import Server
import SessionEngine

/// How a session's events and audio are written on its socket: the Realtime API's JSON events in
/// the client's dialect (`RealtimeSessionHandler`), or a carrier's media messages.
package protocol SessionWire: AnyObject {
    /// What the session writes for `event` (nothing, for events the wire does not carry).
    func send(_ event: ServerEvent, on socket: any SessionSocket)
    /// One piece of a reply's audio.
    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket)
    /// How far into a reply the listener has heard, when the wire knows better than the pace of
    /// sending does (a carrier's marks); nil: estimate it from the pace.
    func heardMs(of responseID: String) -> Int?
    /// A reply's speech was stopped (a barge-in, a cancel): what is queued at the listener should go.
    func speechStopped(responseID: String, on socket: any SessionSocket)
    /// The user's speech paused a reply. A wire that drops what the listener has queued (a
    /// carrier's `clear`) returns how much the listener heard, so that the rest is sent again on
    /// resume; nil: what was sent plays out and the reply goes on after it.
    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int?
    /// Whether `speechPaused` clears the listener's queue, so that a reply must keep the audio it
    /// sent lately to send it again.
    var resendsAfterPause: Bool { get }
    /// Names the endpoint in the session's log lines.
    var endpointName: String { get }
    /// Whether the reply's audio crosses a network that drops packets (a WebRTC call's RTP over
    /// UDP), so that its Opus carries in-band FEC for the listener to recover a lost packet from
    /// the next (RFC 6716 section 2.1.7); a WebSocket's TCP loses nothing.
    var carriesLossyMedia: Bool { get }
    /// Presses `key` on the call (a phone call's RFC 4733 event); false where the carrier has no
    /// keys to press, or the far end takes none.
    func press(_ key: Character) -> Bool
    /// Whether the carrier is a phone call the server presses keys on itself (`PhoneKeysTool`):
    /// the session's `press_keys` calls are run here, not sent to a client.
    var pressesKeys: Bool { get }
}

extension SessionWire {
    package func heardMs(of responseID: String) -> Int? { nil }
    package func speechStopped(responseID: String, on socket: any SessionSocket) {}
    package func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? { nil }
    package var resendsAfterPause: Bool { false }
    package var carriesLossyMedia: Bool { false }
    package func press(_ key: Character) -> Bool { false }
    package var pressesKeys: Bool { false }
}
