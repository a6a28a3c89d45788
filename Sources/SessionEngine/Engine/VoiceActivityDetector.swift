#if canImport(Glibc)
import Glibc
#endif

/// Finds where speech starts and stops in mono audio (16 kHz, or 8 kHz from the telephone), by
/// energy against an adaptive noise floor. Pure and small: samples in, events out, a few numbers
/// of state and no sample buffer, so it costs nothing until audio arrives and little after.
///
/// The audio is measured in 10 ms frames (any chunk size in; a partial frame waits for the rest).
/// A frame's level is its mean power in dBFS. Everything is in milliseconds and decibels, so the
/// settings mean the same at either rate: a frame is 160 samples at 16 kHz, 80 at 8 kHz. Speech
/// loses little power to the telephone band (most of it is voiced, below 4 kHz: the test sentences
/// measure 0.03 to 0.13 dB quieter at 8 kHz than at 16, by sox's stats), so levels and margins
/// hold; the tests run the same sentences at both rates, and through µ-law. The noise floor follows the level of frames that are
/// not speech: down quickly (a pause shows the true floor), up slowly (time constant 0.5 s), so
/// steady background noise becomes the floor and is not speech. It is also never below the
/// quietest frame of the last 2 seconds, so a floor that starts low (digital silence before a noisy
/// microphone opens) catches up within 2 seconds instead of hearing speech forever.
///
/// `threshold` (0...1) maps linearly to how far above the floor speech must rise to start a turn:
/// `3 + 20 × threshold` dB, so 0 is 3 dB (very sensitive), the default 0.5 is 13 dB and 1 is 23 dB
/// (only loud, close speech). Once a turn has started it continues while frames stay above half
/// that margin (hysteresis), which keeps the quieter ends of words. The floor used for these
/// thresholds is at least -70 dBFS, so near-silence is never speech.
///
/// Speech starts after 3 loud frames within one run of frames above the continuation level (30 ms:
/// a click is shorter); the start is reported at the beginning of that run, at most 100 ms before
/// its first loud frame, less `prefixPaddingMs` (not below 0). It stops after `silenceDurationMs`
/// of frames below the continuation level, reported at the end of the last speech frame. Times are
/// milliseconds of audio since the detector began.
public struct VoiceActivityDetector: Sendable {
    public struct Settings: Sendable, Equatable {
        public var threshold: Double
        public var prefixPaddingMs: Int
        public var silenceDurationMs: Int

        public init(threshold: Double = 0.5, prefixPaddingMs: Int = 300, silenceDurationMs: Int = 500) {
            self.threshold = threshold
            self.prefixPaddingMs = prefixPaddingMs
            self.silenceDurationMs = silenceDurationMs
        }

        /// dB above the noise floor that starts speech.
        public var startMarginDB: Double { 3 + 20 * min(1, max(0, threshold)) }
        /// dB above the noise floor that keeps speech going.
        public var continueMarginDB: Double { startMarginDB / 2 }
    }

    public enum Event: Sendable, Equatable {
        case speechStarted(atMs: Int)
        case speechStopped(atMs: Int)
    }

    public static let frameMs = 10
    package static let onsetFrames = 3
    package static let maxBacktrackFrames = 10
    package static let lowestFloorDB: Float = -70
    package static let silenceDB: Float = -120
    package static let floorFall: Float = 0.2
    package static let floorRise: Float = 0.02
    /// The 2-second minimum is kept as four 0.5 s blocks.
    package static let blockFrames = 50

    public var settings: Settings
    /// Samples a second.
    public let sampleRate: Int
    private let frameSamples: Int

    // The frame being filled.
    private var sumOfSquares: Int64 = 0
    private var filled = 0
    /// Frames measured so far: the clock.
    private var frames = 0

    private var floor: Float?
    private var blockMin = Float.infinity
    private var blockFill = 0
    private var previousBlockMins: (Float, Float, Float) = (.infinity, .infinity, .infinity)

    private var speaking = false
    /// First frame of the current run above the continuation level, or -1.
    private var runStart = -1
    private var runFirstLoud = -1
    private var runLoudFrames = 0
    private var lastSpeechFrame = 0
    private var quietFrames = 0

    /// `sampleRate`: any rate whose 10 ms is whole samples; the session's are 16,000 and 8,000.
    public init(sampleRate: Int = 16_000, settings: Settings = Settings()) {
        precondition(sampleRate >= 1000 && sampleRate % 100 == 0, "VoiceActivityDetector: 10 ms must be whole samples at \(sampleRate) Hz")
        self.settings = settings
        self.sampleRate = sampleRate
        frameSamples = sampleRate / 1000 * Self.frameMs
    }

    /// True between a start and a stop.
    public var isSpeaking: Bool { speaking }

    /// Milliseconds of audio measured so far (whole frames).
    public var elapsedMs: Int { frames * Self.frameMs }

    /// Where the current (or last) turn's speech began, before the prefix padding.
    public private(set) var speechOnsetMs = 0

    /// Where the current (or last) turn's speech was last heard: the end of its last loud frame.
    /// (Read by the engine to time an interruption by speech, not by the quiet after it.)
    public var lastSpeechEndMs: Int { (lastSpeechFrame + 1) * Self.frameMs }

    /// The current noise floor in dBFS, once there is one.
    public var noiseFloorDB: Double? { floor.map(Double.init) }

    public mutating func process(_ samples: some Collection<Int16>) -> [Event] {
        var events: [Event] = []
        let done: Void? = samples.withContiguousStorageIfAvailable { buffer in
            for sample in buffer { add(sample, &events) }
        }
        if done == nil {
            for sample in samples { add(sample, &events) }
        }
        return events
    }

    /// Forgets the turn in progress without reporting its end: the audio it belonged to was
    /// committed or cleared by the client.
    public mutating func endSpeech() {
        speaking = false
        resetRun()
        quietFrames = 0
    }

    @inline(__always)
    private mutating func add(_ sample: Int16, _ events: inout [Event]) {
        let s = Int64(sample)
        sumOfSquares &+= s * s
        filled += 1
        if filled == frameSamples {
            measureFrame(&events)
            sumOfSquares = 0
            filled = 0
        }
    }

    private mutating func measureFrame(_ events: inout [Event]) {
        let frame = frames
        frames += 1
        let power = Double(sumOfSquares) / Double(frameSamples) / (32768.0 * 32768.0)
        let level = power > 0 ? max(Self.silenceDB, Float(10 * log10(power))) : Self.silenceDB
        trackMinimum(level)

        var floor = self.floor ?? level
        floor = max(floor, windowMinimum)
        let base = max(floor, Self.lowestFloorDB)
        let loud = level > base + Float(settings.startMarginDB)
        let aboveContinue = level > base + Float(settings.continueMarginDB)

        if aboveContinue {
            if runStart < 0 { runStart = frame }
            if loud {
                if runFirstLoud < 0 { runFirstLoud = frame }
                runLoudFrames += 1
            }
            if speaking {
                lastSpeechFrame = frame
                quietFrames = 0
            } else if runLoudFrames >= Self.onsetFrames {
                speaking = true
                lastSpeechFrame = frame
                quietFrames = 0
                let start = max(runStart, runFirstLoud - Self.maxBacktrackFrames)
                speechOnsetMs = start * Self.frameMs
                events.append(.speechStarted(atMs: max(0, start * Self.frameMs - settings.prefixPaddingMs)))
            }
        } else {
            resetRun()
            // Only frames that are not speech teach the floor.
            floor += (level - floor) * (level < floor ? Self.floorFall : Self.floorRise)
            if speaking {
                quietFrames += 1
                if quietFrames * Self.frameMs >= settings.silenceDurationMs {
                    speaking = false
                    quietFrames = 0
                    events.append(.speechStopped(atMs: (lastSpeechFrame + 1) * Self.frameMs))
                }
            }
        }
        self.floor = floor
    }

    private mutating func resetRun() {
        runStart = -1
        runFirstLoud = -1
        runLoudFrames = 0
    }

    private mutating func trackMinimum(_ level: Float) {
        blockMin = min(blockMin, level)
        blockFill += 1
        if blockFill == Self.blockFrames {
            previousBlockMins = (previousBlockMins.1, previousBlockMins.2, blockMin)
            blockMin = .infinity
            blockFill = 0
        }
    }

    /// The quietest frame of the last 1.5 to 2 seconds.
    private var windowMinimum: Float {
        min(blockMin, previousBlockMins.0, previousBlockMins.1, previousBlockMins.2)
    }
}
