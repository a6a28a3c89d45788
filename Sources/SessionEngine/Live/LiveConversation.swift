import Codec
import JSON
import Models

/// GPT-Live's protocol over Parley's engine, as a value: Live client commands and the engine's
/// Realtime-shaped events in, Live server events and engine inputs out. No socket, no clock: the
/// caller says what time it is (`nowMs`, milliseconds since the session opened) and carries out
/// the steps, so every rule here is tested as a value (`LiveConversationTests`).
///
/// The mapping (docs/protocol.md, "GPT-Live"): the model owns the floor, which on Parley is the
/// engine's `semantic_vad` turn decision with barge-in, so Live has no turn events; the engine's
/// transcripts and reply audio become Live's deltas on one session timeline; the voice front
/// delegates through its `delegate` function (`LiveDelegation`), and the application's
/// commentary is spoken word for word; a fixture is played out as reply audio is, with the input muted.
package struct LiveConversation: Sendable {
    package enum Step: Sendable, Equatable {
        /// A Live server event for the client.
        case send(JSON)
        /// An input for the engine, as a Realtime client event.
        case engine(ClientEvent)
        /// Microphone bytes for the engine, in the session's format (silence while muted).
        case audio([UInt8])
        /// Press `key` on the session's call (RFC 4733), for the command `eventID`.
        case pressKey(Character, eventID: String?)
        /// Play the application's audio (pcm16 at 24 kHz) through the session's output, as a reply
        /// is played, in its format and on its carrier; `fixturePlayed` says when it is over.
        case playFixture([Int16], id: String)
        /// Give the Responses backend this task (the conversation so far goes with it).
        case delegate(task: String, delegationID: String)
        /// An input for the Responses backend's session.
        case backend(ClientEvent)
        /// Call `timer` with this after `afterMs` (one of each kind armed at a time).
        case arm(Timer, afterMs: Int)
        /// The session is over: close the connection (after the steps before this one).
        case close
    }

    package enum Timer: Sendable, Equatable {
        /// A delegation's spoken acknowledgement is due.
        case acknowledgement
    }

    private enum Phase: Sendable {
        case waiting
        case starting(LiveSessionConfig, eventID: String?)
        case started(LiveSessionConfig)
    }

    /// The longest fixture OpenAI plays: 30 s.
    package static let maxFixtureSeconds = 30.0
    /// A fixture's audio is pcm16 at 24 kHz whatever the session's format ("regardless of the
    /// session audio format", `OutputAudioFixturePlayEvent`).
    package static let fixtureRate = 24_000
    /// What the front says when a delegation's acknowledgement is due: Parley's own words, the
    /// same on every model (the built-in agent has no phrasing of its own for it).
    package static let acknowledgement = "One moment, I'm on it."

    package let sessionID: String
    /// The Unix time, in seconds, at which the session ends (its longest life from its start).
    private let expiresAt: Int
    private var phase = Phase.waiting
    private var events: LiveServerEvents
    /// The client muted its microphone (`session.input_audio.mute`).
    private var muted = false
    /// The client event that started the fixture now playing, and the fixture's own id (its
    /// audio's place on the output timeline).
    private var fixture: (eventID: String?, id: String, playing: Bool) = (nil, "", false)
    private var activeResponse: String?
    /// Where the next reply audio starts on the session's timeline, and whose it is.
    private var outputCursorMs = 0
    private var outputResponse: String?
    /// The user's turns being transcribed: where each began and ended, and what was sent of it.
    private var turns: [String: Turn] = [:]
    /// Delegate calls of the response in flight, answered once it is done.
    private var delegatedCalls: [(callID: String, delegationID: String)] = []
    /// Acknowledgements waiting: when each is due.
    private var acknowledgementsDue: [Int] = []
    /// Commentary to speak, in order, once no reply is in flight.
    private var commentary: [String] = []
    /// The delegation the Responses backend is working on, for its events' envelopes.
    private var backendDelegation: String?

    private struct Turn: Sendable {
        var startMs = 0
        var endMs: Int?
        /// The recogniser's growing hypothesis, and what of it the client was sent.
        var heard = ""
        var sent = ""
    }

    /// Whether a session started with `store: true` is recorded (the server records calls), so
    /// that its recording can be downloaded (`GET /v1/live/sessions/{id}/content`).
    private let recordsStored: Bool

    package init(sessionID: String, seed: UInt64, expiresAt: Int, recordsStored: Bool = false) {
        self.sessionID = sessionID
        self.expiresAt = expiresAt
        self.recordsStored = recordsStored
        events = LiveServerEvents(seed: seed)
    }

    package var hasStarted: Bool {
        if case .started = phase { true } else { false }
    }

    /// The session's configuration as it now is, once it has started.
    package var config: LiveSessionConfig? {
        if case .started(let config) = phase { config } else { nil }
    }

    /// The microphone's bytes as the engine is to hear them: as sent, or silence in the session's
    /// format while muted or while a fixture plays (its turn ends as after a pause, and the
    /// timeline goes on); nil before the start, or on a call's session, whose audio is its media.
    /// Fifty times a second, so the carrier asks this before `command` (no steps to allocate).
    package func heard(_ bytes: [UInt8]) -> [UInt8]? {
        guard let config, config.format != .negotiated else { return nil }
        return hearsSilence ? [UInt8](repeating: config.format.silenceByte, count: bytes.count) : bytes
    }

    /// Whether the engine is to hear silence for the user's audio now (muted, or a fixture playing).
    package var hearsSilence: Bool { muted || fixture.playing }

    /// The session's audio format, once it has started.
    package var format: LiveAudioFormat? { config?.format }

    /// A call's front end (a WebRTC data channel) held to `client.data_channel`: its permissions.
    private var frontEnd: LiveDataChannelPermissions? {
        guard let config, config.format == .negotiated else { return nil }
        return config.dataChannel
    }

    /// Whether the primary connection is sent `event` (a front end's channel only what it allows).
    package func reachesPrimary(_ event: JSON) -> Bool { frontEnd?.allows(serverEvent: event) ?? true }

    /// A command of the primary connection's that its permissions refuse, as the error it gets.
    package func refusal(ofPrimary command: LiveCommand) -> ProtocolError? {
        guard let frontEnd, !frontEnd.allows(clientEvent: command.type) else { return nil }
        return ProtocolError(.init(rawValue: "event_not_allowed"), "this data channel may not send \(command.type) (session.client.data_channel.allowed_client_events)",
                             param: "type", eventID: command.eventID)
    }

    /// An `info` notice (`code`, `message`).
    package mutating func info(_ code: String, _ message: String) -> JSON {
        events.make("info", [("code", .string(code)), ("message", .string(message))])
    }

    /// After `session.started`, on a front end with permissions: the `info` that says them.
    package mutating func permissionsNotice() -> JSON? {
        guard let frontEnd else { return nil }
        return info("data_channel_permissions", frontEnd.notice)
    }

    /// The session's delegation, once it has started.
    package var delegation: LiveDelegation? { config?.delegation }

    // MARK: Commands

    package mutating func command(_ command: LiveCommand, nowMs: Int) -> [Step] {
        let id = command.eventID
        if case .start(let config) = command.kind {
            guard case .waiting = phase else { return [.send(events.error(LiveRefusal.alreadyStarted(eventID: id)))] }
            phase = .starting(config, eventID: id)
            var update = config.engineUpdate
            if config.store, recordsStored { update.recording = true }
            return [.engine(ClientEvent(eventID: id, .sessionUpdate(update)))]
        }
        guard let config else {
            let what = if case .audio = command.kind { "audio" } else { "a command" }
            return [.send(events.error(LiveRefusal.notStarted(what, eventID: id)))]
        }
        switch command.kind {
        case .start:
            return []  // answered above
        case .update(let delegation):
            var updated = config
            if let delegation { updated.delegation = config.delegation.updated(to: delegation) }
            phase = .started(updated)
            return [.send(events.make("session.updated", [("session", resource(updated))], replyingTo: id))]
        case .audio(let bytes):
            guard let heard = heard(bytes) else {
                return [.send(events.error(ProtocolError(.invalidValue, "this session's audio is its call's media; session.input_audio.append is for a Live WebSocket",
                                                         param: "type", eventID: id)))]
            }
            return [.audio(heard)]
        case .mute, .unmute:
            muted = command.kind == .mute
            return [.send(events.make(muted ? "session.input_audio.muted" : "session.input_audio.unmuted", replyingTo: id))]
        case .fixture(let bytes):
            return playFixture(bytes, eventID: id, nowMs: nowMs)
        case .instructions(let append):
            return appended("session.instructions.appended", "session.instructions.append", text: append.content, eventID: id, nowMs: nowMs)
        case .thinking(let append):
            acknowledgementsDue.removeAll()
            return appended("session.thinking.appended", "session.thinking.append",
                            text: "Progress on a delegated task\(append.delegationID.map { " (\($0))" } ?? ""): \(append.content)", eventID: id, nowMs: nowMs)
        case .commentary(let append):
            if fixture.playing { return [.send(events.error(LiveRefusal.fixtureActive("session.commentary.append", eventID: id)))] }
            acknowledgementsDue.removeAll()
            commentary.append(append.content)
            return [.send(events.make("session.commentary.appended", [("start_ms", .int(nowMs)), ("end_ms", .int(nowMs))], replyingTo: id))]
                + speakNext()
        case .responseCreate:
            guard config.delegation.backend != nil else { return [.send(events.error(LiveRefusal.needsResponses("response.create", eventID: id)))] }
            return [.backend(ClientEvent(eventID: id, .responseCreate(ResponseOverrides())))]
        case .responseItemCreate(let item):
            guard config.delegation.backend != nil else { return [.send(events.error(LiveRefusal.needsResponses("response.item.create", eventID: id)))] }
            return [.backend(ClientEvent(eventID: id, .conversationItemCreate(item)))]
        case .decision(let type):
            return [.send(events.error(LiveRefusal.decisions(type, eventID: id)))]
        case .dtmf(let key):
            guard config.format == .negotiated else {
                return [.send(events.error(ProtocolError(.invalidValue, "transport.dtmf.send is for a SIP call's session", param: "type", eventID: id)))]
            }
            return [.pressKey(key, eventID: id)]
        case .close:
            return [.send(closed("close_requested", nowMs: nowMs, replyingTo: id)), .close]
        }
    }

    /// A key pressed on the call, as its sidebands are told (`transport.dtmf.sent`), or the error
    /// when the call could not press it.
    package mutating func keyPressed(_ key: Character, sent: Bool, eventID: String?) -> JSON {
        guard sent else {
            return events.error(ProtocolError(.init(rawValue: "dtmf_unavailable"), "the call's far end takes no RFC 4733 telephone-events, or too many keys wait",
                                              param: "event", eventID: eventID))
        }
        return events.make("transport.dtmf.sent", [("event", .string(String(key)))], replyingTo: eventID)
    }

    /// An id for an event the carrier writes itself (a phone's key).
    package mutating func newEventID() -> String { events.id("event") }

    /// A client message that could not be taken: its `error`, and the session goes on.
    package mutating func refuse(_ error: ProtocolError) -> [Step] {
        [.send(events.error(error))]
    }

    /// `session.closed`, the session's last event: its final snapshot and usage.
    package mutating func closed(_ reason: String, nowMs: Int, replyingTo id: String? = nil) -> JSON {
        guard let config else { return events.make("session.closed", [("reason", .string(reason))], replyingTo: id) }
        return events.make("session.closed", [("reason", .string(reason)), ("session", resource(config)), ("usage", usage(nowMs))], replyingTo: id)
    }

    /// Text the model is to know but not say: a system message in the conversation.
    private mutating func appended(_ type: String, _ command: String, text: String, eventID: String?, nowMs: Int) -> [Step] {
        if fixture.playing { return [.send(events.error(LiveRefusal.fixtureActive(command, eventID: eventID)))] }
        return [.engine(ClientEvent(eventID: eventID, .conversationItemCreate(NewConversationItem(role: .system, text: text)))),
                .send(events.make(type, [("start_ms", .int(nowMs)), ("end_ms", .int(nowMs))], replyingTo: eventID))]
    }

    /// The whole payload is checked before anything is cut or muted (OpenAI: "validated before
    /// model speech is interrupted and input is muted").
    private mutating func playFixture(_ bytes: [UInt8], eventID: String?, nowMs: Int) -> [Step] {
        if fixture.playing { return [.send(events.error(LiveRefusal.fixtureActive("session.output_audio.fixture.play", eventID: eventID)))] }
        guard !bytes.isEmpty, bytes.count % 2 == 0 else { return [.send(events.error(LiveRefusal.fixtureShape(eventID: eventID)))] }
        let seconds = Double(bytes.count / 2) / Double(Self.fixtureRate)
        guard seconds <= Self.maxFixtureSeconds else {
            return [.send(events.error(LiveRefusal.fixtureTooLong(seconds: seconds, eventID: eventID)))]
        }
        var steps: [Step] = []
        // The application's audio takes the floor: a reply in flight is cut, as a barge-in cuts it.
        if let activeResponse { steps.append(.engine(ClientEvent(.responseCancel(responseID: activeResponse)))) }
        fixture = (eventID, events.id("fixture"), true)
        steps.append(.send(events.make("session.output_audio.fixture.playing", replyingTo: eventID)))
        steps.append(.playFixture(bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }, id: fixture.id))
        return steps
    }

    /// The fixture's audio has all been sent (`played`), or could not be played: `fixture.played`,
    /// or an error, and the input heard again.
    package mutating func fixturePlayed(_ played: Bool, nowMs: Int) -> [Step] {
        guard fixture.playing else { return [] }
        let eventID = fixture.eventID
        fixture = (nil, "", false)
        let said = played ? events.make("session.output_audio.fixture.played", replyingTo: eventID)
                          : events.error(ProtocolError(.init(rawValue: "fixture_failed"), "the fixture could not be played: this server has no speech workers, or they are full",
                                                       param: "audio", eventID: eventID))
        return [.send(said)] + speakNext(nowMs: nowMs)
    }

    // MARK: Time

    package mutating func timer(_ timer: Timer, nowMs: Int) -> [Step] {
        switch timer {
        case .acknowledgement:
            return speakNext(nowMs: nowMs)
        }
    }

    /// The next thing to say once nothing is being said: commentary first (it cancels the
    /// acknowledgements), else an acknowledgement that is due, else a timer for the next one due.
    private mutating func speakNext(nowMs: Int = .max) -> [Step] {
        guard activeResponse == nil, !fixture.playing else { return [] }
        if !commentary.isEmpty {
            return [say(commentary.removeFirst())]
        }
        guard let due = acknowledgementsDue.min() else { return [] }
        guard due <= nowMs else { return [.arm(.acknowledgement, afterMs: due - nowMs)] }
        acknowledgementsDue.removeAll()
        return [say(Self.acknowledgement)]
    }

    private func say(_ text: String) -> Step {
        var overrides = ResponseOverrides()
        overrides.scripted = .init(text: text, isFiller: false)
        return .engine(ClientEvent(.responseCreate(overrides)))
    }

    // MARK: The engine's events

    /// What the client is sent for one of the engine's events (most have no Live counterpart).
    package mutating func engine(_ event: ServerEvent, nowMs: Int) -> [Step] {
        switch event.kind {
        case .sessionUpdated:
            guard case .starting(let config, let eventID) = phase else { return [] }
            phase = .started(config)
            return [.send(events.make("session.started", [("session", resource(config))], replyingTo: eventID))]
                + config.input.map { item in .engine(ClientEvent(.conversationItemCreate(NewConversationItem(role: item.role, text: item.text)))) }
        case .error(let error):
            if case .starting = phase { phase = .waiting }
            return [.send(events.error(error))]
        case .speechStarted(let startMs, let itemID):
            if turns.count < 64 { turns[itemID] = Turn(startMs: startMs) }
            return []
        case .speechStopped(let endMs, let itemID):
            turns[itemID]?.endMs = endMs
            return []
        case .inputAudioTranscriptionDelta(let itemID, _, let delta):
            // Live's transcript is deltas only, never rewritten: a hypothesis's last word (its
            // punctuation unsettled: "Please." becomes "Please delegate") waits for the next.
            guard var turn = turns[itemID] else { return [] }
            turn.heard += delta
            turns[itemID] = turn
            guard let space = turn.heard.lastIndex(of: " ") else { return [] }
            return transcript(itemID, upTo: String(turn.heard[..<space]), nowMs: nowMs)
        case .inputAudioTranscriptionCompleted(let itemID, _, let text, _, _):
            let steps = transcript(itemID, upTo: text, nowMs: nowMs)
            turns[itemID] = nil
            return steps
        case .inputAudioTranscriptionFailed(let itemID, _, _):
            turns[itemID] = nil
            return []
        case .responseCreated(let response):
            activeResponse = response.id
            return []
        case .outputAudioTranscriptDelta(let at, let delta), .outputTextDelta(let at, let delta):
            if outputResponse != at.responseID { startOutput(at.responseID, nowMs: nowMs) }
            return [.send(events.make("session.output_transcript.delta",
                                      [("delta", .string(delta)), ("start_ms", .int(outputCursorMs)), ("end_ms", .int(outputCursorMs))]))]
        case .functionCallArgumentsDone(let at, let name, let arguments) where name == LiveDelegation.toolName:
            guard let config else { return [] }
            let delegationID = events.id("deleg")
            delegatedCalls.append((at.callID, delegationID))
            acknowledgementsDue.append(nowMs + config.delegation.acknowledgementDelayMs)
            let delegation: JSON = .object([("id", .string(delegationID)), ("target", .string(config.delegation.target)), ("type", .string("delegation"))])
            var steps: [Step] = [.send(events.make("session.delegation.created", [("delegation", delegation), ("offset_ms", .int(nowMs))]))]
            if config.delegation.backend != nil {
                backendDelegation = delegationID
                // The task in the front's words; a call whose arguments are not the schema's is
                // passed as it was written.
                let task = (try? JSON(parsing: arguments))?["task"]?.string ?? arguments
                steps.append(.delegate(task: task, delegationID: delegationID))
            }
            return steps
        case .responseDone(let response):
            guard response.id == activeResponse else { return [] }
            activeResponse = nil
            // The delegate calls are answered in the conversation: the task is the backend's now.
            var steps: [Step] = delegatedCalls.map { call in
                let output = JSON.object([("status", .string("delegated")), ("delegation_id", .string(call.delegationID))]).description
                return .engine(ClientEvent(.conversationItemCreate(NewConversationItem(role: .tool, text: "", function: .output(callID: call.callID, output: output)))))
            }
            delegatedCalls.removeAll()
            steps.append(.send(events.make("session.usage.updated", [("usage", usage(nowMs))])))
            return steps + speakNext(nowMs: nowMs)
        default:
            return []
        }
    }

    // MARK: The Responses backend

    /// What the backend said: its streaming events in `response.event` envelopes, its answer
    /// spoken as commentary is, its errors as errors.
    package mutating func backend(_ outcome: LiveResponsesEvents.Outcome, nowMs: Int) -> [Step] {
        switch outcome {
        case .event(let event):
            return [.send(events.make("response.event", [("event", event)] + (backendDelegation.map { [("delegation_id", JSON.string($0))] } ?? [])))]
        case .answered(let text):
            acknowledgementsDue.removeAll()
            commentary.append(text)
            return speakNext(nowMs: nowMs)
        case .error(let error):
            return [.send(events.error(error))]
        case .continues:
            return []
        }
    }

    /// A piece of a reply's audio, on the session's timeline.
    package mutating func replyAudio(_ bytes: [UInt8], responseID: String, nowMs: Int) -> JSON? {
        guard let config else { return nil }
        if outputResponse != responseID { startOutput(responseID, nowMs: nowMs) }
        return outputAudio(bytes[...], format: config.format)
    }

    private mutating func startOutput(_ responseID: String, nowMs: Int) {
        outputResponse = responseID
        outputCursorMs = max(outputCursorMs, nowMs)
    }

    private mutating func outputAudio(_ bytes: ArraySlice<UInt8>, format: LiveAudioFormat) -> JSON {
        let start = outputCursorMs
        outputCursorMs += bytes.count * 1000 / format.bytesPerSecond
        return events.make("session.output_audio.delta", [("delta", .string(Base64.encode(bytes))), ("start_ms", .int(start)), ("end_ms", .int(outputCursorMs))])
    }

    /// The transcript of a turn through `text`: what the client was not yet sent of it. Where
    /// `text` rewrote words already sent, the words past as many as were sent.
    private mutating func transcript(_ itemID: String, upTo text: String, nowMs: Int) -> [Step] {
        guard var turn = turns[itemID] else { return [] }
        let delta: String
        if text.hasPrefix(turn.sent) {
            delta = String(text.dropFirst(turn.sent.count))
        } else {
            let rest = text.split(separator: " ").dropFirst(turn.sent.split(separator: " ").count).joined(separator: " ")
            delta = rest.isEmpty ? "" : " " + rest
        }
        guard !delta.isEmpty else { return [] }
        turn.sent += delta
        turns[itemID] = turn
        return [.send(events.make("session.input_transcript.delta",
                                  [("delta", .string(delta)), ("start_ms", .int(turn.startMs)), ("end_ms", .int(turn.endMs ?? max(turn.startMs, nowMs)))]))]
    }

    private func resource(_ config: LiveSessionConfig) -> JSON {
        config.resource(id: sessionID, expiresAt: expiresAt)
    }

    private func usage(_ nowMs: Int) -> JSON {
        .object([("seconds", .number(Double(nowMs) / 1000))])
    }
}

extension LiveAudioFormat {
    /// One byte of silence in this format: PCM's zero, G.711's code for it (ITU-T G.711 tables:
    /// µ-law 0xFF, A-law 0xD5).
    var silenceByte: UInt8 {
        switch self {
        case .pcm24k, .pcm16k, .negotiated: 0
        case .pcmu: 0xFF
        case .pcma: 0xD5
        }
    }
}
