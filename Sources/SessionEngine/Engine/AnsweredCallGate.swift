/// What a placed call's session does while `AnsweringMachineDetector` decides who answered, and
/// after (issue 54): the application says it with the call (`transport.answering_machine`), and
/// the gate carries it out. A value: the callee's 20 ms frames in (as the carrier has them, with
/// their samples), actions out; no clock of its own.
///
/// The agent's greeting is never held hostage to detection: by default (`until_decided:
/// respond`) the session hears the callee from the first frame and answers whoever speaks, and the
/// verdict only says who it was. `listen` holds the callee's audio back from the session until the
/// verdict (at most `AnsweringMachineDetector.maxMs`, 4 s), then gives it all at once, so a person's
/// "hello?" is answered and a machine's greeting never is.
///
/// With a machine: `continue` (the session goes on, told), `hang_up`, or `leave_message`: the
/// session stops answering (its reply in flight cancelled, the callee no longer heard), waits for
/// the greeting's cue (`CueListener`: the beep ending, or 1.5 s of silence after the greeting, or
/// 20 s at most), says the message word for word, and hangs up once it is heard.
public struct AnsweredCallGate<Frame: Sendable>: Sendable {
    public enum Action: Sendable {
        /// The callee's audio for the session to hear, in order (one frame, or what `listen` held).
        case hear([Frame])
        /// Who answered: told as an event, kept in the report.
        case decided(AnsweringMachineDetector.Verdict)
        /// The session stops answering: its reply in flight cancelled, what is queued dropped.
        case silence
        /// The session says `message`, word for word.
        case say(String)
        /// The call ends (Parley's BYE).
        case hangUp
    }

    public enum Phase: Sendable, Equatable {
        case deciding
        /// A person, or unknown, or a machine the session goes on with.
        case conversing
        /// A machine: waiting for its beep or the greeting's end.
        case awaitingCue
        /// The message is being said.
        case leavingMessage
        case done
    }

    public let policy: AnsweringMachinePolicy
    public private(set) var phase = Phase.deciding
    private var detector = AnsweringMachineDetector()
    private var held: [Frame] = []
    private var cue = CueListener()

    public init(policy: AnsweringMachinePolicy) {
        self.policy = policy
    }

    /// One 20 ms frame of the callee's audio, and its `samples` at `sampleRate`.
    public mutating func heard(_ frame: Frame, samples: [Int16], sampleRate: Int = 8_000) -> [Action] {
        switch phase {
        case .deciding:
            var actions: [Action] = []
            if policy.untilDecided == .respond {
                actions.append(.hear([frame]))
            } else if held.count < AnsweringMachineDetector.maxMs / 20 + 1 {  // the detector decides by then
                held.append(frame)
            }
            guard let verdict = detector.heard(samples, sampleRate: sampleRate) else { return actions }
            actions.append(.decided(verdict))
            return actions + decided(verdict)
        case .conversing:
            return [.hear([frame])]
        case .awaitingCue:
            guard cue.heard(samples, sampleRate: sampleRate) else { return [] }
            return sayMessage()
        case .leavingMessage, .done:
            return []
        }
    }

    /// The message has been said and heard out: the call ends.
    public mutating func messageSaid() -> [Action] {
        guard phase == .leavingMessage else { return [] }
        phase = .done
        return [.hangUp]
    }

    private mutating func decided(_ verdict: AnsweringMachineDetector.Verdict) -> [Action] {
        let release: [Action] = held.isEmpty ? [] : [.hear(held)]
        held = []
        guard verdict.answer == .machine, policy.onMachine != .continue else {
            phase = .conversing
            return release
        }
        if policy.onMachine == .hangUp {
            phase = .done
            return [.silence, .hangUp]
        }
        phase = .awaitingCue
        // A beep decided it: the cue is that beep's end.
        cue = CueListener(inTone: verdict.reason == "beep")
        return [.silence]
    }

    private mutating func sayMessage() -> [Action] {
        phase = .leavingMessage
        return [.say(policy.message ?? "")]
    }
}

/// After a machine's verdict: the moment to speak, a beep that has ended (a tone of
/// `AnsweringMachineDetector.beepMs` or more, then not), `cueSilenceMs` of silence, or the
/// longest wait.
struct CueListener: Sendable {
    /// Silence after the greeting that stands for its end when no beep comes.
    static let cueSilenceMs = 1_500
    /// The longest wait for the cue, from the verdict: a greeting that never ends gets the
    /// message anyway.
    static let maxCueWaitMs = 20_000

    private var toneBin = -1
    private var toneMs = 0
    private var quietMs = 0
    private var waitedMs = 0

    init(inTone: Bool = false) {
        if inTone { toneMs = AnsweringMachineDetector.beepMs }
    }

    /// Whether this frame is the cue.
    mutating func heard(_ frame: [Int16], sampleRate: Int) -> Bool {
        waitedMs += 20
        if waitedMs >= Self.maxCueWaitMs { return true }
        let level = AnsweringMachineDetector.level(of: frame)
        if level.db >= AnsweringMachineDetector.minSpeechDB,
           let bin = AnsweringMachineDetector.tonalBin(frame, sampleRate: sampleRate, energy: level.energy) {
            if toneBin != bin && toneBin != -1 { toneMs = 0 }
            toneBin = bin
            toneMs += 20
            quietMs = 0
            return false
        }
        // The tone stopped: after a beep, the machine records from here.
        if toneMs >= AnsweringMachineDetector.beepMs { return true }
        (toneBin, toneMs) = (-1, 0)
        quietMs = level.db < AnsweringMachineDetector.minSpeechDB + 10 ? quietMs + 20 : 0
        return quietMs >= Self.cueSilenceMs
    }
}

/// What the session does about who answered the call it placed (`transport.answering_machine`).
public struct AnsweringMachinePolicy: Sendable, Equatable {
    public enum OnMachine: String, Sendable, Equatable, CaseIterable {
        case `continue`
        case hangUp = "hang_up"
        case leaveMessage = "leave_message"
    }

    public enum UntilDecided: String, Sendable, Equatable, CaseIterable {
        case respond, listen
    }

    public var onMachine = OnMachine.continue
    /// What `leave_message` says (required with it).
    public var message: String?
    public var untilDecided = UntilDecided.respond

    public init(onMachine: OnMachine = .continue, message: String? = nil, untilDecided: UntilDecided = .respond) {
        self.onMachine = onMachine
        self.message = message
        self.untilDecided = untilDecided
    }
}
