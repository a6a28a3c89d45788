import Access
import Codec
import Loop
import Server
import Session
import SIP
import SessionEngine

/// A SIP call is its session's socket (the session ends the call with a BYE; the call has no
/// client of its own: its listeners are its conversation's sidebands) and its media leg (reply
/// audio to the caller's RTP, paced by the media's queue; keys pressed as RFC 4733 events).
extension SIPCall: SessionSocket, MediaLeg {
    var loop: EventLoop { agent.loop }
    func send(text: String) {}
    /// The session ends the call (a limit, a drain): a BYE on the next pass, not inside the
    /// session's own call.
    func close(_ ending: SessionEnding, reason: String) {
        _ = agent.loop.schedule(after: 0) { [weak self] in self?.hangUp(.serverBye) }
    }
    var isOpen: Bool { dialog.state != .ended }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { account(sessionBytes: handlerBytes) }

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
    /// The media's send tick takes the reply's next frame itself (`pullReplyFrame`): one queue,
    /// the reply's, not a second one here.
    var pullsReplies: Bool { true }

    /// The reply's next frame, for this tick's packet: pulled from the conversation's speech, it
    /// comes back through `sendAudio` into the media's one-frame slot.
    func pullReplyFrame() { _ = replies?.pullReply() }

    /// What the call does on its session's course: a message left on a machine ends with its
    /// reply; the agent's `press_keys` is pressed here, on the line.
    func observed(_ fact: SessionFact) {
        switch fact {
        case .responseEnded: replyEnded()
        case .toolCalled(_, let callID, PhoneKeysTool.name, let arguments):
            // After this pass: the response that called it ends first.
            _ = agent.loop.schedule(after: 0) { [weak self] in self?.pressKeys(callID: callID, arguments: arguments) }
        default: break
        }
    }

    /// The agent's `press_keys` (`PhoneKeysTool`): the keys pressed as RFC 4733 events, the call
    /// answered with what was pressed (or why nothing was).
    func pressKeys(callID: String, arguments: String) {
        let output: String
        do throws(PhoneKeysTool.Refusal) {
            let keys = try PhoneKeysTool.keys(in: arguments)
            guard keys.allSatisfy({ press($0) }) else { throw .noTelephoneEvents }
            output = PhoneKeysTool.output(pressed: keys)
        } catch {
            output = PhoneKeysTool.output(refused: error.message)
        }
        conversation?.driver.answerTool(callID: callID, output: output)
    }

    /// No RTP from the caller for `--sip-media-timeout`: the call ends.
    func mediaTimedOut() { hangUp(.mediaTimeout) }
}

/// The call's conversation: the API `CallAPI` chose, on the call's settings.
extension SIPCall {
    /// The call's session settings: the server's and its route's for calls, then `session`; the
    /// SIP leg fixes the audio: G.711 as negotiated, whatever a session says.
    func sessionOptions(_ session: SessionUpdate? = nil) -> SessionEngine.Options {
        let codec = dialog.offer.codec
        sessionLaw = codec == .pcmu ? .muLaw : .aLaw
        return SessionEngine.Options(phoneCall: agent.endpoint.sessions, format: codec == .pcmu ? .pcmu : .pcma,
                                     sessions: [agent.settings.session, route?.session, session])
    }

    /// The call's conversation in `api` begins on this call: the sidebands that attached before
    /// are its own from now on. `admitted`: the tenant's place, which the session holds.
    func converse(_ api: CallAPI, admitted: Admitted = .phoneCall) {
        let made = api.conversation(CallOpening(callID: id, endpoint: agent.endpoint.sessions, admitted: admitted, carrier: "sip", leg: self, options: sessionOptions))
        conversation = made
        line.converse(made)
        made.open(self)
    }
}

extension SIPDialogEnd {
    /// How the session ends: normally for a BYE either way, gone for anything else (a timeout).
    var sessionEnding: SessionEnding { self == .callerBye || self == .serverBye || self == .drained ? .ended : .wentAway }
    /// Why, in the words of GPT-Live's `session.closed` (the Realtime API has none).
    var closeReason: String { self == .callerBye ? "remote_hangup" : self == .serverBye ? "close_requested" : "connection_lost" }
}
