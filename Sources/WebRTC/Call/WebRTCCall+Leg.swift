import Loop
import Server
import Media
import Session
import SessionEngine

/// The call as its conversation's socket and media leg: text events on the `oai-events` data
/// channel, the replies' Opus on the media track (WebRTC carries no audio on the channel), closing
/// as ending the call.
extension WebRTCCall: SessionSocket, MediaLeg {
    /// The session closes its socket (a limit passed, a drain): the call ends on the next pass,
    /// not inside the session's own call, which goes on after `close` returns.
    func close(_ ending: SessionEnding, reason: String) {
        loop.schedule(after: 0) { [weak self] in self?.end(.server) }
    }

    var isOpen: Bool { !ended }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { account(sessionBytes: handlerBytes) }

    /// One 20 ms Opus packet of a reply, as SRTP to the caller.
    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        guard case .opus(let packet) = piece, !ended else { return }
        media.send(opus: packet, call: self)
    }

    var carriesEvents: Bool { true }
    /// RTP over UDP loses packets: replies carry Opus's in-band FEC.
    var carriesLossyMedia: Bool { true }
}

/// Call control on the call's line: a WebRTC call is answered by its offer's answer, so only a
/// hangup applies.
extension WebRTCCall: CallCarrier {
    func control(_ action: CallControl) {
        if case .hangUp = action { end(.hangup) }
    }
}

/// The call on its loop's playout clock: its media plays each 20 ms tick until it ends.
extension WebRTCCall: PlayoutClient {
    var playoutEnded: Bool { ended }
    func play(dueBy now: UInt64, nextTick: UInt64) {
        media.play(dueBy: now, nextTick: nextTick, call: self)
        if memory.tick() { account() }
    }
}
