import Codec
import Models
import SpeechContracts

/// The session's speech detector: a neural model's probabilities through
/// `SpeechProbabilityDetector` (the default, Silero), or the energy detector (`--vad energy`, and
/// the fallback when the model cannot load or cannot make a stream for this session).
package enum VoiceActivity: Sendable {
    case energy(VoiceActivityDetector)
    case neural(NeuralVoiceActivity)
    /// Held only while a case's value is being changed, so that the value is not shared and its
    /// window buffer is changed in place rather than copied (SwiftNIO's state machines do the same).
    case modifying

    package init(model: (any VoiceActivityModel)?, sampleRate: Int, settings: VoiceActivityDetector.Settings, batched: Bool = false) {
        if let model {
            self = .neural(NeuralVoiceActivity(model: model, sampleRate: sampleRate, settings: settings, batched: batched))
        } else {
            self = .energy(VoiceActivityDetector(sampleRate: sampleRate, settings: settings))
        }
    }

    package var settings: VoiceActivityDetector.Settings {
        get {
            switch self {
            case .energy(let detector): detector.settings
            case .neural(let neural): neural.detector.settings
            case .modifying: VoiceActivityDetector.Settings()
            }
        }
        set {
            switch self {
            case .energy(var detector):
                detector.settings = newValue
                self = .energy(detector)
            case .neural(var neural):
                neural.detector.settings = newValue
                self = .neural(neural)
            case .modifying: break
            }
        }
    }

    package var isNeural: Bool {
        if case .neural = self { return true }
        return false
    }

    /// Where the current (or last) turn's speech began, before the padding, in detector time.
    package var speechOnsetMs: Int {
        switch self {
        case .energy(let detector): detector.speechOnsetMs
        case .neural(let neural): neural.speechOnsetMs
        case .modifying: 0
        }
    }

    /// Where the current (or last) turn's speech last was, in detector time.
    package var lastSpeechEndMs: Int {
        switch self {
        case .energy(let detector): detector.lastSpeechEndMs
        case .neural(let neural): neural.lastSpeechEndMs
        case .modifying: 0
        }
    }

    /// Memory the detector holds: the neural one's window and model state while a stream is open.
    package var heapBytes: Int {
        if case .neural(let neural) = self { return neural.heapBytes }
        return 0
    }

    package mutating func process(_ samples: [Int16]) -> [VoiceActivityDetector.Event] {
        switch self {
        case .energy(var detector):
            let events = detector.process(samples)
            self = .energy(detector)
            return events
        case .neural(var neural):
            self = .modifying
            if let events = neural.process(samples) {
                self = .neural(neural)
                return events
            }
            // No stream for this session (the model refused its rate, or could not make one): it
            // is heard by energy from here on, on the same clock.
            // Its clock starts at these samples: the engine moves its origin (`isNeural`).
            var detector = VoiceActivityDetector(sampleRate: neural.sampleRate, settings: neural.detector.settings)
            let events = detector.process(samples)
            self = .energy(detector)
            return events
        case .modifying:
            return []
        }
    }

    /// Audio given and not yet scored: the neural detector's windows staged for the loop's batch
    /// (a pass can stage a second of them, a loop or a client held up on a busy machine), and
    /// the window being filled. The energy detector measures as the audio comes: 0.
    package var unscoredMs: Int {
        if case .neural(let neural) = self { return neural.unscoredMs }
        return 0
    }

    /// Windows staged for the loop's batch whose scores have not been taken (`scored`).
    package var awaitsScores: Bool {
        if case .neural(let neural) = self { return neural.staged > 0 }
        return false
    }

    /// The events of the windows the loop's batch has scored since last asked (a batched stream's:
    /// `process` staged them and returned none).
    package mutating func scored() -> [VoiceActivityDetector.Event] {
        guard case .neural(var neural) = self else { return [] }
        self = .modifying
        let events = neural.scored()
        self = .neural(neural)
        return events
    }

    package mutating func endSpeech() {
        switch self {
        case .energy(var detector):
            detector.endSpeech()
            self = .energy(detector)
        case .neural(var neural):
            neural.detector.endSpeech()
            self = .neural(neural)
        case .modifying: break
        }
    }

    /// The session's audio has stopped for a while: let the model's stream go (a pooled Silero
    /// instance, 9.5 MiB); the next audio takes one again, with fresh state.
    package mutating func releaseStream() {
        guard case .neural(var neural) = self else { return }
        self = .modifying
        neural.releaseStream()
        self = .neural(neural)
    }
}

/// A neural model on a session's audio: the engine's 20 ms frames (any size, in fact) gathered
/// into the model's windows (32 ms for Silero) in one buffer made with the stream, so the hot
/// path allocates nothing, and each window's probability given to the timing rules: at once, or,
/// `batched`, when the loop's batch has scored it (`scored`), later in the same pass.
package struct NeuralVoiceActivity: Sendable {
    package let model: any VoiceActivityModel
    package let sampleRate: Int
    /// Windows are staged for the loop's batch rather than scored as they complete.
    package let batched: Bool
    /// Windows staged and not yet scored.
    private(set) var staged = 0
    package var detector: SpeechProbabilityDetector
    private var stream: (any VoiceActivityStream)?
    private var window: [Float] = []
    private var filled = 0
    /// Samples of partial windows dropped with a released stream: the detector's clock counts
    /// whole windows, so these are added back to keep its times on the session's audio clock.
    private var skippedSamples = 0

    /// Silero's window; a model with another one resets the rules' clock with its first stream.
    package static let defaultWindowMs = 32

    package init(model: any VoiceActivityModel, sampleRate: Int, settings: VoiceActivityDetector.Settings, batched: Bool = false) {
        self.model = model
        self.sampleRate = sampleRate
        self.batched = batched
        detector = SpeechProbabilityDetector(windowMs: Self.defaultWindowMs, settings: settings)
    }

    package var speechOnsetMs: Int { detector.speechOnsetMs + skippedMs }
    /// `VoiceActivity.unscoredMs`.
    package var unscoredMs: Int { staged * detector.windowMs + filled * 1000 / sampleRate }
    package var lastSpeechEndMs: Int { detector.lastSpeechEndMs + skippedMs }
    /// The window buffer, and the model's state for the stream (a Silero instance) while one is held.
    package var heapBytes: Int { window.capacity * MemoryLayout<Float>.stride + (stream?.stateBytes ?? 0) }
    private var skippedMs: Int { skippedSamples * 1000 / sampleRate }

    /// The events these samples bring, or nil when no stream could be made.
    package mutating func process(_ samples: [Int16]) -> [VoiceActivityDetector.Event]? {
        if stream == nil {
            guard let made = model.makeStream(sampleRate: sampleRate, batched: batched), made.windowSamples > 0 else { return nil }
            let windowMs = made.windowSamples * 1000 / sampleRate
            if windowMs != detector.windowMs && detector.elapsedMs == 0 {
                detector = SpeechProbabilityDetector(windowMs: windowMs, settings: detector.settings)
            }
            stream = made
            window = [Float](repeating: 0, count: made.windowSamples)
            filled = 0
        }
        guard let stream else { return nil }
        var events: [VoiceActivityDetector.Event] = []
        let count = window.count
        let skippedMs = skippedMs
        let batched = stream.isBatched
        var staged = staged
        // The rules and the fill count are plain values, worked on locally while the buffer is
        // borrowed, and put back after.
        var detector = detector
        var filled = filled
        defer {
            self.detector = detector
            self.filled = filled
            self.staged = staged
        }
        window.withUnsafeMutableBufferPointer { buffer in
            for sample in samples {
                buffer[filled] = Float(sample) * (1.0 / 32768.0)
                filled += 1
                if filled == count {
                    filled = 0
                    let full = UnsafeBufferPointer(buffer)
                    if staged == 0, !detector.isSpeaking, Self.isQuiet(full) {
                        // Below any voice between turns: silence, without asking the model.
                        stream.skipped(full)
                        if let event = detector.window(probability: 0) { events.append(Self.shifted(event, by: skippedMs)) }
                    } else if batched {
                        stream.stage(full)
                        staged += 1
                    } else {
                        let p = stream.speechProbability(of: full)
                        if let event = detector.window(probability: p) { events.append(Self.shifted(event, by: skippedMs)) }
                    }
                }
            }
        }
        return events
    }

    /// A window's mean square below which, between turns, it is taken for silence without the
    /// model (`PCM.quietMeanSquare`, -60 dBFS). Within a turn every window is scored, so a quiet
    /// word or a digital gap between words never ends one early. Measured: 200 live microphones
    /// of -66 dBFS noise cost the model nothing (docs/benchmarks.md, "Density").
    package static let quietMeanSquare = Float(PCM.quietMeanSquare)

    package static func isQuiet(_ window: UnsafeBufferPointer<Float>) -> Bool {
        var sum: Float = 0
        for x in window { sum += x * x }
        return sum < quietMeanSquare * Float(window.count)
    }

    /// The windows scored since last asked, through the rules.
    package mutating func scored() -> [VoiceActivityDetector.Event] {
        guard let stream else { return [] }
        var events: [VoiceActivityDetector.Event] = []
        let skippedMs = skippedMs
        var detector = detector
        stream.takeScored { p in
            if let event = detector.window(probability: p) { events.append(Self.shifted(event, by: skippedMs)) }
        }
        self.detector = detector
        staged = 0
        return events
    }

    package mutating func releaseStream() {
        guard stream != nil else { return }
        skippedSamples += filled
        filled = 0
        stream = nil
        window = []
    }

    private static func shifted(_ event: VoiceActivityDetector.Event, by skippedMs: Int) -> VoiceActivityDetector.Event {
        switch event {
        case .speechStarted(let ms): .speechStarted(atMs: ms + skippedMs)
        case .speechStopped(let ms): .speechStopped(atMs: ms + skippedMs)
        }
    }
}
