/// Turns a neural VAD's speech probabilities, one per window, into where speech starts and stops:
/// the timing rules alone, a pure value (probabilities in, events out), so every rule is a unit
/// test with scripted probabilities and no model.
///
/// The rules follow Silero's own streaming utility (`VADIterator`) and LiveKit's use of it:
/// - a window is loud when its probability is at least `threshold` (server_vad's `threshold`,
///   0.5 by default as in the Realtime API), and keeps speech going while it is at least
///   `threshold − 0.15` (hysteresis: the quieter ends of words stay in the turn);
/// - speech starts after `onsetWindows` windows in a row that keep it going, at least one of them
///   loud (64 ms: a click or a cough's burst is one window), reported at the start of that run
///   less `prefixPaddingMs` (not below 0);
/// - it stops after `silenceDurationMs` of windows below the continuation level, reported at the
///   end of the last window that kept it going.
/// Times are milliseconds of audio since the detector began.
public struct SpeechProbabilityDetector: Sendable, Equatable {
    public typealias Event = VoiceActivityDetector.Event
    public typealias Settings = VoiceActivityDetector.Settings

    /// Silero's own gap between starting and continuing (`neg_threshold = threshold - 0.15`).
    package static let hysteresis: Float = 0.15
    package static let onsetWindows = 2

    public var settings: Settings
    /// A window's length: 32 ms for Silero at either rate.
    public let windowMs: Int

    private var windows = 0
    private var speaking = false
    private var runStart = -1
    private var runLength = 0
    private var runHasLoud = false
    private var lastSpeechWindow = 0
    private var quietWindows = 0

    public init(windowMs: Int, settings: Settings = Settings()) {
        self.windowMs = max(1, windowMs)
        self.settings = settings
    }

    public var isSpeaking: Bool { speaking }
    /// Milliseconds of audio scored so far.
    public var elapsedMs: Int { windows * windowMs }
    /// Where the current (or last) turn's speech began, before the prefix padding.
    public private(set) var speechOnsetMs = 0
    /// Where the current (or last) turn's speech last was: the end of its last window at or above
    /// the continuation level (how long a speech over a reply has lasted, for `ReplyInterruption`).
    public var lastSpeechEndMs: Int { (lastSpeechWindow + 1) * windowMs }

    /// At least the continuation level, so that threshold 0 still needs some speech.
    private var startLevel: Float { max(continueLevel, Float(min(1, max(0, settings.threshold)))) }
    /// Never below 0.01: a probability of 0 is silence at any threshold, so speech can stop.
    private var continueLevel: Float { max(0.01, Float(min(1, max(0, settings.threshold))) - Self.hysteresis) }

    /// The next window's probability; at most one event comes of it.
    public mutating func window(probability: Float) -> Event? {
        let index = windows
        windows += 1
        let p = probability.isFinite ? probability : 0
        if p >= continueLevel {
            if speaking {
                lastSpeechWindow = index
                quietWindows = 0
                return nil
            }
            if runStart < 0 { runStart = index }
            runLength += 1
            if p >= startLevel { runHasLoud = true }
            guard runLength >= Self.onsetWindows, runHasLoud else { return nil }
            speaking = true
            lastSpeechWindow = index
            quietWindows = 0
            speechOnsetMs = runStart * windowMs
            resetRun()
            return .speechStarted(atMs: max(0, speechOnsetMs - settings.prefixPaddingMs))
        }
        resetRun()
        guard speaking else { return nil }
        quietWindows += 1
        guard quietWindows * windowMs >= settings.silenceDurationMs else { return nil }
        speaking = false
        quietWindows = 0
        return .speechStopped(atMs: (lastSpeechWindow + 1) * windowMs)
    }

    /// Forgets the turn in progress without reporting its end (the client committed or cleared it).
    public mutating func endSpeech() {
        speaking = false
        quietWindows = 0
        resetRun()
    }

    private mutating func resetRun() {
        runStart = -1
        runLength = 0
        runHasLoud = false
    }
}
