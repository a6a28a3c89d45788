import Access
import Codec
import JSON
import Loop
import Server
import SessionEngine

/// The Realtime API's side of a phone call: its session's events to the sidebands attached by the
/// call's id (`/v1/realtime?call_id=…`, GA's dialect, as OpenAI's SIP calls speak it), a caller's
/// keys as `input_audio_buffer.dtmf_event_received`, a sideband's `transport.dtmf.send` pressed on
/// the call, and who answered a placed call as `transport.answered_by`. Its audio is its call's
/// leg's (`MediaLeg`): the driver plays replies there and reads back what the caller heard.
package final class RealtimeCallConversation: CallConversation, LegCarried {
    package private(set) var driver: SessionDriver!
    private let callID: String
    package private(set) weak var leg: (any MediaLeg)?
    private var sidebands = CallSidebands()
    package let endpointName: String

    /// `admitted`: the tenant's place, which the session holds (a placed call's), or a call's own.
    package init(callID: String, endpoint: RealtimeEndpoint, admitted: Admitted, options: SessionEngine.Options, endpointName: String, leg: any MediaLeg) {
        self.callID = callID
        self.endpointName = endpointName
        self.leg = leg
        driver = SessionDriver(phoneCall: endpoint, admitted: admitted, options: options, wire: self)
    }

    package func open(_ socket: any SessionSocket) { driver.open(socket) }
    package func hear(_ convert: (AudioInput) throws -> [Int16]) { driver.feedAudio(convert) }
    package func greet(_ text: String) { driver.say(text) }
    package func userSaid(_ text: String) { driver.userSaid(text) }

    package func keyPressed(_ key: Character) {
        tell(.callKeyReceived(key: String(key), receivedAt: WallClock.seconds()))
    }

    package func answered(by verdict: AnsweringMachineDetector.Verdict) {
        driver.noteAnsweredBy(verdict)
        tell(.callAnsweredBy(callID: callID, answer: verdict.answer.rawValue, reason: verdict.reason, decidedAfterMs: verdict.afterMs))
    }

    package func close(_ ending: SessionEnding, reason: String?) {
        driver.close(ending)
        sidebands.closeAll()
    }

    // MARK: Sidebands

    package func adopt(_ attached: CallSidebands) { sidebands = attached }

    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard let loop = driver.loop else { return }
        sidebands.attach(sideband, on: remote, id: id, home: loop)
    }

    package func detach(sideband id: ObjectIdentifier) { sidebands.detach(id) }

    package func receive(sidebandText text: String) {
        // Keys pressed on the call: GPT-Live's sideband command, taken on a Realtime call's too.
        if text.contains("transport.dtmf.send"), let json = try? JSON(parsing: text), json["type"]?.string == "transport.dtmf.send" {
            return press(json)
        }
        driver.receiveClientEvent(text: text)
    }

    /// `{"type": "transport.dtmf.send", "event": "5"}`: the key pressed on the call (RFC 4733), then
    /// `transport.dtmf.sent`; or an `error` (not a key, or a far end that takes none).
    private func press(_ json: JSON) {
        let eventID = json["event_id"]?.string
        guard let text = json["event"]?.string, text.count == 1, let key = text.first, leg?.press(key) == true else {
            return tell(.error(EventError(type: .invalidRequest, code: "dtmf_unavailable",
                                          message: "'event' must be one DTMF key (0-9, A-D, * or #), and the far end must take RFC 4733 telephone-events",
                                          param: "event", eventID: eventID)))
        }
        tell(.callKeySent(key: text, clientEventID: eventID))
    }

    private func tell(_ kind: ServerEvent.Kind) { toSidebands(driver.event(kind)) }

    /// An event in GA's dialect to every sideband; nothing is made when none listens.
    private func toSidebands(_ event: @autoclosure () -> ServerEvent) {
        guard !sidebands.isEmpty else { return }
        sidebands.send(text: event().json(dialect: .ga))
    }

    // MARK: SessionWire: events to the sidebands, audio to the call's leg

    package func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // A call may have no listener: its errors are in the log.
        if case .error(let error) = event.kind {
            sessionLog.info("call error", metadata: ["call": "\(callID)", "code": "\(error.code)", "error": "\(error.message)"])
        }
        toSidebands(event)
    }

    package func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) { leg?.sendAudio(piece, at: at, on: socket) }
}
