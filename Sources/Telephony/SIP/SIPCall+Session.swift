import Codec
import JSON
import Loop
import Server
import Session
import SessionEngine

/// A SIP call is its session's socket (events to the sidebands; the session ends the call with a
/// BYE) and wire (reply audio to the caller's RTP, paced by the media's queue).
extension SIPCall: SessionSocket, SessionWire {
    var loop: EventLoop { agent.loop }
    func send(text: String) { socketState.send(text: text) }
    func send(binary: [UInt8]) {}
    /// The session ends the call (a limit, a drain): a BYE on the next pass, not inside the
    /// session's own call.
    func close(_ ending: SessionEnding, reason: String) {
        _ = agent.loop.schedule(after: 0) { [weak self] in self?.hangUp(.serverBye) }
    }
    var isOpen: Bool { dialog.state != .ended }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { account(sessionBytes: handlerBytes) }

    var endpointName: String { "sip" }

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        guard !socketState.isEmpty else { return }
        socketState.send(text: event.json(dialect: .ga))
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        guard case .pcm(let bytes) = piece else { return }
        let law: G711.Law = media.codec == .pcmu ? .muLaw : .aLaw
        media.queue(law == sessionLaw ? bytes : G711.encode(G711.decode(bytes, sessionLaw), law), responseID: at.responseID)
    }

    /// What the caller heard: what went out (the queue is paced to real time, a packet a tick).
    func heardMs(of responseID: String) -> Int? { media.sentMs(of: responseID) }

    /// The caller's speech paused the reply: what waits to be sent is dropped (as `/twilio`'s
    /// `clear`), and the reply resumes from what went out.
    var resendsAfterPause: Bool { true }

    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? {
        let heard = media.sentMs(of: responseID)
        media.clearQueue()
        return heard
    }

    func speechStopped(responseID: String, on socket: any SessionSocket) { media.clearQueue() }

    func press(_ key: Character) -> Bool { media.press(key) }
    var pressesKeys: Bool { true }
}

