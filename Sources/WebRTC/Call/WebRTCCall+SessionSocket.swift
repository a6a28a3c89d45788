import Loop
import Server
import Media
import Session

/// The call as its session's socket: text events on the `oai-events` data channel, Opus packets on
/// the media track (WebRTC carries no audio deltas on the channel), closing as ending the call.
extension WebRTCCall: SessionSocket {
    func send(binary: [UInt8]) {
        guard !ended else { return }
        media.send(opus: binary, call: self)
    }

    /// The session closes its socket (a limit passed, a drain): the call ends on the next pass,
    /// not inside the session's own call, which goes on after `close` returns.
    func close(_ ending: SessionEnding, reason: String) {
        loop.schedule(after: 0) { [weak self] in self?.end(.server) }
    }

    var isOpen: Bool { !ended }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { account(sessionBytes: handlerBytes) }
}

/// The call on its loop's playout clock: its media plays each 20 ms tick until it ends.
extension WebRTCCall: PlayoutClient {
    var playoutEnded: Bool { ended }
    func play(dueBy now: UInt64, nextTick: UInt64) {
        media.play(dueBy: now, nextTick: nextTick, call: self)
        if memory.tick() { account() }
    }
}
