import Access
import Codec
import JSON
import Loop
import Server
import SessionEngine

/// The Realtime API's side of a call, whichever carrier holds it: its session's events to the
/// call's own channel where it has one (a WebRTC call's `oai-events` data channel) and to the
/// sidebands attached by the call's id (`/v1/realtime?call_id=…`), the `output_audio_buffer`
/// events OpenAI sends on calls, a caller's keys as `input_audio_buffer.dtmf_event_received`, a
/// sideband's `transport.dtmf.send` pressed on the call, and who answered a placed call as
/// `transport.answered_by`. Its audio is its call's leg's (`MediaLeg`): the driver plays replies
/// there and reads back what the caller heard.
package final class RealtimeCallConversation: CallConversation, LegCarried {
    package private(set) var driver: SessionDriver!
    private let callID: String
    private let dialect: Dialect
    package private(set) weak var leg: (any MediaLeg)?
    private var sidebands = CallSidebands()
    private var audio = OutputAudioBuffer()
    private weak var line: CallLine?
    package let endpointName: String

    init(_ opening: CallOpening, options: SessionEngine.Options) {
        callID = opening.callID
        dialect = opening.dialect
        endpointName = opening.carrier
        leg = opening.leg
        driver = SessionDriver(endpoint: opening.endpoint, admitted: opening.admitted, options: options, wire: self)
        if opening.isPhoneLine { driver.echoGuardAlways = true } else { driver.echoGuardByDefault = opening.endpoint.echoGuardByDefault }
        driver.startTrace(traceparent: opening.traceparent, endpointName: endpointName)
    }

    package var sessionID: String { driver.engine.sessionID }
    package func open(_ socket: any SessionSocket) { driver.open(socket) }
    package func hear(_ convert: (AudioInput) throws -> [Int16]) { driver.feedAudio(convert) }
    package func greet(_ text: String) { driver.say(text) }
    package func userSaid(_ text: String) { driver.userSaid(text) }

    /// A client event on the call's own channel, under the session's event limits.
    package func receive(clientText text: UnsafeRawBufferPointer) {
        guard driver.admitEvent() else { return }
        driver.receive(clientText: text)
    }

    package func keyPressed(_ key: Character) {
        tell(.callKeyReceived(key: String(key), receivedAt: WallClock.seconds()))
    }

    package func answered(by verdict: AnsweringMachineDetector.Verdict) {
        driver.noteAnsweredBy(verdict)
        tell(.callAnsweredBy(callID: callID, answer: verdict.answer.rawValue, reason: verdict.reason, decidedAfterMs: verdict.afterMs), kept: true)
    }

    package func close(_ ending: SessionEnding, reason: String?) {
        // The carrier ended the line first, so its close says how the call ended.
        sidebands.closeAll(reason: line?.closeReason)
        driver.close(ending)
    }

    // MARK: Sidebands

    package func adopt(_ attached: CallSidebands) { sidebands.take(attached) }
    package func joined(_ line: CallLine) { self.line = line }

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
        tell(.callKeySent(key: text, clientEventID: eventID), kept: true)
    }

    /// An event of the call's to its listeners; `kept`: progress, kept in the line's story too.
    private func tell(_ kind: ServerEvent.Kind, kept: Bool = false) {
        guard let socket = driver.socket else { return }
        let event = driver.event(kind)
        if kept { line?.keep(event.json(dialect: dialect)) }
        send(event, on: socket)
    }

    // MARK: SessionWire: events to the call's channel and sidebands, audio to its leg

    package func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // Parley's turn-taking events are its own page's; a call's listeners are OpenAI's clients.
        guard event.isSent(in: dialect), !event.isParleyTurnTaking else { return }
        let toChannel = leg?.carriesEvents == true
        if !toChannel, case .error(let error) = event.kind {
            // A phone call may have no listener: its errors are in the log.
            sessionLog.info("call error", metadata: ["call": "\(callID)", "code": "\(error.code)", "error": "\(error.message)"])
        }
        // Nothing is made when none listens.
        if toChannel || !sidebands.isEmpty {
            let text = event.json(dialect: dialect)
            if toChannel { socket.send(text: text) }
            sidebands.send(text: text)
        }
        switch event.kind {
        case .responseDone(let response):
            // A cancelled reply's audio was cut, not played out: cleared, not stopped.
            let ended = response.status == .cancelled ? audio.stopped(response.id) : audio.done(response.id)
            if let ended { send(driver.event(ended), on: socket) }
        case .outputAudioBufferCleared(let responseID):
            // The engine said it (the client's clear): not said twice.
            audio.cleared(responseID)
        default:
            break
        }
    }

    package func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        if let started = audio.audio(of: at.responseID) { send(driver.event(started), on: socket) }
        leg?.sendAudio(piece, at: at, on: socket)
    }

    package func speechStopped(responseID: String, on socket: any SessionSocket) {
        if let cleared = audio.stopped(responseID) { send(driver.event(cleared), on: socket) }
        leg?.speechStopped(responseID: responseID, on: socket)
    }
}
