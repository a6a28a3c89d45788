import Server
import SessionEngine

/// A carrier's media, whichever API speaks over it: a reply's audio out at the carrier's pace,
/// what the listener heard, what a pause or a stop drops, and keys pressed on the call. A
/// WebSocket's audio travels as the API's events; a call's as RTP (`WebRTCCall`, `SIPCall`) or a
/// media stream's messages (`TwilioCallHandler`).
package protocol MediaLeg: AnyObject {
    /// One piece of a reply's audio.
    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket)
    /// How far into a reply the listener has heard, when the leg knows better than the pace of
    /// sending does (a carrier's marks); nil: estimate it from the pace.
    func heardMs(of responseID: String) -> Int?
    /// A reply's speech was stopped (a barge-in, a cancel): what is queued at the listener should go.
    func speechStopped(responseID: String, on socket: any SessionSocket)
    /// The user's speech paused a reply. A leg that drops what the listener has queued (a
    /// carrier's `clear`) returns how much the listener heard, so that the rest is sent again on
    /// resume; nil: what was sent plays out and the reply goes on after it.
    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int?
    /// Whether `speechPaused` clears the listener's queue, so that a reply must keep the audio it
    /// sent lately to send it again.
    var resendsAfterPause: Bool { get }
    /// Whether the reply's audio crosses a network that drops packets (a WebRTC call's RTP over
    /// UDP), so that its Opus carries in-band FEC for the listener to recover a lost packet from
    /// the next (RFC 6716 section 2.1.7); a WebSocket's TCP loses nothing.
    var carriesLossyMedia: Bool { get }
    /// Whether the leg takes the replies' pieces itself, one a tick of its own clock
    /// (`SessionDriver.pullReply`: a SIP call's RTP), rather than being sent them paced ahead:
    /// then the reply's queue is the only one.
    var pullsReplies: Bool { get }
    /// Whether the leg has a channel of its own for the API's events (a WebRTC call's `oai-events`
    /// data channel), which its socket's `send(text:)` writes to; a phone line's listeners are its
    /// sidebands alone.
    var carriesEvents: Bool { get }
    /// Presses `key` on the call (a phone call's RFC 4733 event); false where the carrier has no
    /// keys to press, or the far end takes none.
    func press(_ key: Character) -> Bool
    /// A fact of the session's, after its observers have it: a leg that acts on the session's
    /// course does so here (a SIP call ends the message it leaves on a machine when the reply
    /// ends, and runs the agent's `press_keys` itself), so the driver knows no carrier's ways.
    func observed(_ fact: SessionFact)
}

extension MediaLeg {
    package func heardMs(of responseID: String) -> Int? { nil }
    package func speechStopped(responseID: String, on socket: any SessionSocket) {}
    package func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? { nil }
    package var resendsAfterPause: Bool { false }
    package var carriesLossyMedia: Bool { false }
    package var carriesEvents: Bool { false }
    package var pullsReplies: Bool { false }
    package func press(_ key: Character) -> Bool { false }
    package func observed(_ fact: SessionFact) {}
}
