import JSON

/// Server-side turn detection settings (`turn_detection: {"type": "server_vad", ...}`): the server
/// finds where speech starts and stops, commits the audio and, by default, answers.
public struct ServerVAD: Sendable, Equatable {
    /// 0...1: with Silero, the speech probability a 32 ms window needs (`SpeechProbabilityDetector`);
    /// with the energy detector, how far above the background noise audio must rise to count as
    /// speech, higher needing louder speech (see `VoiceActivityDetector` for the mapping to decibels).
    public var threshold = 0.5
    /// Audio kept before the detected start, so the first syllable is not clipped.
    public var prefixPaddingMs = 300
    /// Non-speech needed to end a turn.
    public var silenceDurationMs = 500
    /// Start a response when a turn ends.
    public var createResponse = true
    /// Cancel the response in flight when the user starts speaking (barge-in).
    public var interruptResponse = true
    /// Set when the client asked for `semantic_vad`: with an end-of-turn model (Smart Turn), a
    /// short silence asks it whether the turn is over, and the eagerness sets how long an
    /// unfinished turn may stay open (`maxWaitMs`; see `TurnEnding`); without one, the eagerness
    /// chooses how much silence ends a turn (`silenceMs`).
    public var semanticEagerness: Eagerness?
    /// With server VAD: after a response, this long without the user speaking commits the silence
    /// as a turn and answers it (`input_audio_buffer.timeout_triggered`); nil: never.
    public var idleTimeoutMs: Int?
    /// Parley's extension: when speech during a spoken reply pauses it, and when it becomes a
    /// barge-in (see `ReplyInterruption`).
    public var interruption = ReplyInterruption.Settings()
    /// Parley's extension `speculative_response`: with `semantic_vad` and an end-of-turn model, the
    /// reply starts on the words so far while the model weighs a silence, and is heard only if
    /// the turn ends with those words (`SpeculativeReply`). nil: the server's default
    /// (`--speculative-replies`), and the field is left out of what the session reports.
    public var speculativeResponse: Bool?

    /// `semantic_vad`'s `eagerness`: low waits longest (the user may pause mid-thought), high
    /// answers soonest; auto is medium, as in the API.
    public enum Eagerness: String, Sendable, Equatable, CaseIterable {
        case low, medium, high, auto

        /// Without a model, the silence that ends a turn.
        package var silenceMs: Int {
            switch self {
            case .low: 1000
            case .medium, .auto: 500
            case .high: 250
            }
        }

        /// With a model that says the turn is not over, the longest it stays open after the speech
        /// ended: the Realtime API's documented maximum timeouts for each eagerness (8, 4, 2 s).
        package var maxWaitMs: Int {
            switch self {
            case .low: 8000
            case .medium, .auto: 4000
            case .high: 2000
            }
        }

        /// The model's probability that ends a turn. Smart Turn's own cut is 0.5, which `high`
        /// keeps; on Piper's voice, fragments such as "I would like to order" scored up to 0.53
        /// (and 0.79 with 100 ms more silence) while finished sentences scored 0.95-0.99, so the
        /// patient eagernesses ask for more (docs/benchmarks.md, "Turn-taking").
        package var completeAt: Double {
            switch self {
            case .low: 0.9
            case .medium, .auto: 0.8
            case .high: 0.5
            }
        }

        /// Finished words the audio model does not confirm end the turn after this much silence:
        /// past the mid-thought pauses each eagerness means to wait through (auto: up to 1 s).
        package var finishedWaitMs: Int {
            switch self {
            case .low: 1_600
            case .medium, .auto: 1_200
            case .high: 800
            }
        }

        /// The model and the words agreeing end the turn after this much silence: past a clause's
        /// comma (`TurnEnding.Settings.agreedWaitMs`).
        package var agreedWaitMs: Int {
            switch self {
            case .low: 600
            case .medium, .auto: 500
            case .high: 300
            }
        }

        /// A question the model does not confirm ends the turn after this much silence: half the
        /// finished words' wait (docs/benchmarks.md, "Parley's operating point").
        package var askedWaitMs: Int { finishedWaitMs / 2 }

        /// The rule's settings; `tuning` (the server's, `--turn-complete-at`,
        /// `--turn-finished-wait-ms` and `--turn-question-wait-ms`) moves `auto`'s operating point,
        /// the eagerness clients leave as it is.
        package func turnEnding(readsWords: Bool, tuning: TurnEnding.Tuning = .init()) -> TurnEnding.Settings {
            let tuned = self == .auto ? tuning : TurnEnding.Tuning()
            var settings = TurnEnding.Settings(maxWaitMs: maxWaitMs, silenceMs: silenceMs, completeAt: tuned.completeAt ?? completeAt,
                                               readsWords: readsWords)
            settings.finishedWaitMs = tuned.finishedWaitMs ?? finishedWaitMs
            settings.askedWaitMs = tuned.askedWaitMs ?? askedWaitMs
            settings.agreedWaitMs = agreedWaitMs
            // Digits read out wait past the eagerness's own pause even when the tuning waits less.
            settings.spellingOutWaitMs = min(maxWaitMs, max(settings.finishedWaitMs, finishedWaitMs) + 300)
            return settings
        }
    }

    public init(threshold: Double = 0.5, prefixPaddingMs: Int = 300, silenceDurationMs: Int = 500,
                createResponse: Bool = true, interruptResponse: Bool = true) {
        self.threshold = threshold
        self.prefixPaddingMs = prefixPaddingMs
        self.silenceDurationMs = silenceDurationMs
        self.createResponse = createResponse
        self.interruptResponse = interruptResponse
    }

    package static let thresholdRange = 0.0...1.0
    package static let prefixPaddingRange = 0...10_000
    package static let silenceDurationRange = 0...10_000
    package static let idleTimeoutRange = 5_000...30_000
}

package extension ServerVAD {
    var json: JSON {
        var json = apiJSON
        // The extension is reported only once a client has changed it: clients that do not know it
        // (the SDKs, which check what they read) never see a field the API does not have.
        if !interruption.isDefault, case .object(var members) = json {
            members.append(("interruption", .object([
                ("min_duration_ms", .int(interruption.minDurationMs)),
                ("min_words", .int(interruption.minWords)),
            ])))
            json = .object(members)
        }
        if let speculativeResponse, case .object(var members) = json {
            members.append(("speculative_response", .bool(speculativeResponse)))
            json = .object(members)
        }
        return json
    }

    private var apiJSON: JSON {
        if let eagerness = semanticEagerness {
            return .object([
                ("type", .string("semantic_vad")),
                ("eagerness", .string(eagerness.rawValue)),
                ("create_response", .bool(createResponse)),
                ("interrupt_response", .bool(interruptResponse)),
            ])
        }
        return .object([
            ("type", .string("server_vad")),
            ("threshold", .number(threshold)),
            ("prefix_padding_ms", .int(prefixPaddingMs)),
            ("silence_duration_ms", .int(silenceDurationMs)),
            ("idle_timeout_ms", idleTimeoutMs.map(JSON.int) ?? .null),
            ("create_response", .bool(createResponse)),
            ("interrupt_response", .bool(interruptResponse)),
        ])
    }
}
