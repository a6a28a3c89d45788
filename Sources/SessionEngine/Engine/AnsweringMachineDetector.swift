import Glibc

/// Who answered a call Parley placed, from the first seconds of the callee's audio (issue 54): a
/// person, a machine (voicemail, an IVR), or unknown, decided within about two seconds of the
/// answer. A value: 20 ms frames of the line (8 kHz G.711, decoded) in, at most one `Verdict` out,
/// with the milliseconds since the answer it took; no clock of its own (a frame is 20 ms).
///
/// The rules, cadence first, as the classic detectors (Asterisk's AMD) read a greeting, with a
/// beep beside them:
/// - a beep (a pure tone of 200 ms or more, as a voicemail's "after the tone") is a machine;
/// - speech that runs on for `greetingMs` without a pause of `pauseMs` is a machine: a recorded
///   greeting ("Hi, you've reached…") says a sentence at once, where a person says "Hello?" and waits;
/// - speech that stops, after at most `helloMs` of it, for `afterHelloMs` of silence is a person
///   waiting for an answer; more than `helloMs` of speech, in sentences with pauses between them
///   (an IVR's menu, a greeting read slowly), is a machine: a person says hello and waits;
/// - `silenceMs` of silence from the answer, with nothing said, is unknown (a person who says
///   nothing, a line that carries nothing), as is anything still undecided at `maxMs`.
/// A frame is speech when its level is `speechAboveFloorDB` over the line's quietest frame so far
/// (and over `minSpeechDB`), so a noisy line's floor is not speech; or, however quiet the line
/// has been, at `loudDB` or more (a callee who speaks at once, before a quiet frame set the floor).
public struct AnsweringMachineDetector: Sendable {
    public enum Answer: String, Sendable, Equatable, CaseIterable {
        case human, machine, unknown
    }

    public struct Verdict: Sendable, Equatable {
        public var answer: Answer
        /// What decided it: `beep`, `long_greeting`, `short_greeting`, `silence`, `undecided`.
        public var reason: String
        /// Milliseconds of the callee's audio it took, from the answer.
        public var afterMs: Int
    }

    public static let greetingMs = 1_800
    public static let pauseMs = 300
    public static let helloMs = 2_000
    public static let afterHelloMs = 500
    public static let silenceMs = 3_000
    public static let maxMs = 4_000
    static let beepMs = 200
    static let speechAboveFloorDB: Float = 12
    static let minSpeechDB: Float = -50
    static let loudDB: Float = -30

    public private(set) var verdict: Verdict?
    private var elapsedMs = 0
    private var floorDB: Float = 0
    /// Speech heard in all, the current run (short pauses bridged), the silence since the last
    /// speech, and the pause inside the run so far.
    private var speechMs = 0
    private var runMs = 0
    private var quietMs = 0
    private var heardSpeech = false
    /// The tone bin of the frames in a row that were a pure tone, and how long.
    private var toneBin = -1
    private var toneMs = 0

    /// Voicemail beeps: 425 Hz (much of Europe's tones), 440, 480, 620, then 800 to 2,000 Hz in
    /// steps (most machines' "beep" is near 1 kHz).
    static let toneHz: [Double] = [425, 440, 480, 620, 800, 900, 1000, 1100, 1200, 1400, 1600, 1800, 2000]

    public init() {}

    /// One 20 ms frame at `sampleRate`; the verdict, when this frame made it.
    public mutating func heard(_ frame: [Int16], sampleRate: Int = 8_000) -> Verdict? {
        guard verdict == nil, !frame.isEmpty else { return nil }
        elapsedMs += 20
        let (db, energy) = Self.level(of: frame)
        floorDB = elapsedMs == 20 ? db : min(floorDB, db)
        let speech = db >= Self.loudDB || (db >= Self.minSpeechDB && db >= floorDB + Self.speechAboveFloorDB)

        // A pure tone: one bin holds most of the frame's energy (Goertzel, section by section).
        if speech, let bin = Self.tonalBin(frame, sampleRate: sampleRate, energy: energy) {
            toneMs = toneBin == bin ? toneMs + 20 : 20
            toneBin = bin
            if toneMs >= Self.beepMs { return decide(.machine, "beep") }
        } else {
            (toneBin, toneMs) = (-1, 0)
        }

        if speech {
            heardSpeech = true
            speechMs += 20
            // A pause shorter than `pauseMs` is within the run (between words, at a comma).
            runMs = quietMs >= Self.pauseMs ? 20 : runMs + quietMs + 20
            quietMs = 0
            if runMs >= Self.greetingMs { return decide(.machine, "long_greeting") }
            if speechMs > Self.helloMs { return decide(.machine, "talks_on") }
        } else {
            quietMs += 20
            if heardSpeech, quietMs >= Self.afterHelloMs, speechMs <= Self.helloMs { return decide(.human, "short_greeting") }
            if !heardSpeech, elapsedMs >= Self.silenceMs { return decide(.unknown, "silence") }
        }
        if elapsedMs >= Self.maxMs { return decide(.unknown, "undecided") }
        return nil
    }

    private mutating func decide(_ answer: Answer, _ reason: String) -> Verdict {
        let made = Verdict(answer: answer, reason: reason, afterMs: elapsedMs)
        verdict = made
        return made
    }

    /// A frame's level in dBFS, and its energy (the sum of its squares).
    static func level(of frame: [Int16]) -> (db: Float, energy: Double) {
        var energy = 0.0
        for sample in frame { energy += Double(sample) * Double(sample) }
        let meanSquare = energy / Double(max(frame.count, 1))
        return (Float(10 * log10(max(meanSquare, 1) / (32_768.0 * 32_768.0))), energy)
    }

    /// The tone bin that holds over 70 % of the frame's energy, if one does.
    static func tonalBin(_ frame: [Int16], sampleRate: Int, energy: Double) -> Int? {
        guard energy > 0 else { return nil }
        var best = (bin: -1, power: 0.0)
        for (bin, hz) in toneHz.enumerated() {
            let coefficient = 2 * cos(2 * Double.pi * hz / Double(sampleRate))
            var s1 = 0.0, s2 = 0.0
            for sample in frame {
                let s0 = Double(sample) + coefficient * s1 - s2
                s2 = s1
                s1 = s0
            }
            let power = (s1 * s1 + s2 * s2 - coefficient * s1 * s2) * 2 / Double(frame.count)
            if power > best.power { best = (bin, power) }
        }
        return best.power > 0.7 * energy ? best.bin : nil
    }
}
