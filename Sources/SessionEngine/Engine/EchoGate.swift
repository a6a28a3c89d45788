import Glibc

/// The echo guard's rule for what the VAD may hear while a reply is going out: a pure value fed,
/// for each 10 ms input frame, the level of the reply's audio at the frame's place in time (the
/// reference) and the input's own level after echo cancellation; it answers whether the frame
/// counts as the user (passed as it is) or as the reply's echo (held down to the room's level).
///
/// The rule is the Geigel double-talk detector's, on levels: while reply audio has been played
/// within `windowMs` (the echo path's delay, and the alignment's slack, both fall inside it),
/// input counts as speech only when it is louder than the loudest recent reference frame would
/// leak at (`leakDB`, the design's -10 dB) plus `marginDB`. Speech that crosses that keeps the
/// gate open for `hangoverMs`, so the quieter ends of the user's words are heard too.
///
/// Why a gate at all when a canceller runs first: measured on espeak-ng speech echoed 150 ms late at
/// -10 dB (`EchoCancellerTests`), libspeexdsp's canceller attenuates it by 2 dB in the reply's
/// first second, 4 dB in its second, 8 in its third and 15 only by its fifth (23 dB once
/// converged), while the VAD would pause a reply within its first 100 ms of echo. The gate holds from the first frame; the canceller then removes the echo from
/// what the gate lets through (the user's words during a reply), and keeps a louder leak than
/// the design's below the gate once it has converged.
///
/// `EchoGuard` holds back the last 60 ms while the gate is on and lets them through whole when
/// input crosses it, so the start of a word under the bar is not lost.
///
/// The cost of the rule: during a reply, the user must be heard within `-leakDB - marginDB`
/// (6 dB) of the reply's own level, the classic Geigel figure; a quiet talker cannot barge in
/// over a loud reply, which is what a loudspeaker without echo cancellation forces.
public struct EchoGate: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// How loud the echo can be, relative to what was played: issue 24's -10 dB.
        public var leakDB = -10.0
        /// How far above that leak input must rise to be the user's.
        public var marginDB = 4.0
        /// How long after reply audio the gate stays on: the canceller's tail (300 ms) and 100 ms
        /// more for the alignment's error.
        public var windowMs = 400
        /// How long the gate stays open after input crossed it.
        public var hangoverMs = 200
        /// Reference quieter than this is silence (espeak-ng's pauses, a reply's end).
        public var silentReferenceDB = -55.0

        public init() {}

        /// A phone line's (G.711 at 8 kHz, a SIP or Twilio call): its echo comes back after the
        /// network's round trip as well as the handset's, and the window must span it. At -10 dB
        /// the 400 ms window held an echo 400 ms late and let one 500 ms late interrupt the reply
        /// (EchoGuardEndToEndTests); 800 ms spans a 700 ms round trip, at the cost of the gate
        /// staying on 800 ms after the reply's last audio.
        public static var phoneLine: Settings {
            var settings = Settings()
            settings.windowMs = 800
            return settings
        }
    }

    public enum Verdict: Sendable, Equatable {
        /// No reply audio within the window: the gate is not on.
        case open
        /// Reply audio is playing and the input rose above it: the user.
        case passed
        /// The reply's echo: the input is scaled by `gain` (0...1) down to the room's level.
        case held(gain: Float)
    }

    public static let frameMs = 10
    public let settings: Settings
    /// The last `windowMs` of reference levels, a frame each (a ring).
    private var references: [Float]
    private var next = 0
    private var hangover = 0
    /// The input's level while no reply plays: where held frames are brought down to.
    public private(set) var floorDB: Float = -70

    public init(settings: Settings = Settings()) {
        self.settings = settings
        references = [Float](repeating: -120, count: max(1, settings.windowMs / Self.frameMs))
    }

    /// Whether reply audio has been played within the window.
    public var replyAudible: Bool { loudestReference > Float(settings.silentReferenceDB) }

    private var loudestReference: Float { references.max() ?? -120 }

    /// One frame: the reference's level at it and the input's (dBFS).
    public mutating func frame(referenceDB: Double, inputDB: Double) -> Verdict {
        // Digital silence is -infinity dBFS: counted as -120.
        references[next] = max(-120, Float(referenceDB))
        next = (next + 1) % references.count
        let input = max(-120, Float(inputDB))
        let loudest = loudestReference
        guard loudest > Float(settings.silentReferenceDB) else {
            hangover = 0
            // The room's level: down quickly, up slowly (as the energy detector's floor).
            floorDB += (input - floorDB) * (input < floorDB ? 0.2 : 0.02)
            return .open
        }
        if input > loudest + Float(settings.leakDB + settings.marginDB) {
            hangover = settings.hangoverMs / Self.frameMs
            return .passed
        }
        if hangover > 0 {
            hangover -= 1
            return .passed
        }
        // Down to the room's level, not to silence: a VAD whose floor learnt digital silence
        // would take the room for speech once the reply ends.
        let gainDB = min(0, floorDB - input)
        return .held(gain: Self.amplitude(dB: gainDB))
    }

    package static func amplitude(dB: Float) -> Float { powf(10, dB / 20) }
}
