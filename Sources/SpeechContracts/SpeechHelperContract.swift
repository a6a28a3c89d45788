import Models
import JSON

/// The speech helper's protocol as the server sees it: the version, the limits, the operations and
/// the error codes, written once on this side; helpers/parley_speech.py's "Contract" section is the
/// other (its `--contract` prints that table, and `SpeechHelperContractTests` fails when the two
/// differ). In SpeechContracts, not Speech, because the session layer switches on its error codes
/// (`ModelFailure`) and may not import Speech (scripts/tools/check-layers.sh). docs/protocol.md,
/// "The speech helper".
public enum SpeechHelperContract {
    /// Carried by each connection's first message (`hello`) and checked by both sides: 2 is the
    /// streaming contract (1, never sent, re-sent a turn's whole audio with every decode).
    public static let version = 2
    /// Headers are a few fields; a payload is at most a standalone turn's audio (8 s of 16 kHz
    /// pcm16, 256 KB) or a clause of speech, with room to spare.
    public static let maxHeaderBytes = 64 * 1024
    public static let maxPayloadBytes = 1024 * 1024
    /// The rates a stream or a standalone turn may have (8,000: telephone audio, from G.711).
    public static let sampleRates = [16_000, 8_000]
    /// Smart Turn reads a turn's last 8 s.
    public static let turnSeconds = 8
    /// A stream keeps its last 30 s: Whisper reads 30 s windows.
    public static let streamSeconds = 30
    /// Streams one connection (one server loop) may hold: 256 talking at once on one loop is far
    /// past what two cores decode in real time, and it bounds a connection's audio at 256 × 960 KB.
    public static let streamsPerConnection = 256
    /// Requests of one kind one connection may have waiting; past it the helper answers `overloaded`.
    public static let queuePerConnection = 32

    /// What a request asks (its header's `op`).
    public enum Operation: String, CaseIterable, Sendable {
        /// The first message either way: the protocol version, and the helper's models.
        case hello
        /// A stream (a turn's audio) with its rate; `append` adds to it.
        case open, append
        /// A decode of what the stream holds (up to its first `samples`, when given): a partial
        /// (`fast`: on a shorter window), or the final text, which closes the stream.
        case partial, finish
        /// The stream is dropped (the turn was cleared).
        case close
        /// Is the turn over: on a stream's last `turnSeconds`, or on audio sent with it.
        case turn
        /// Text to pcm16, a clause at a time.
        case speak
        /// Any request: queued, it never runs; running, its answer is dropped.
        case cancel
        /// The helper's counters (decodes, verdicts, cancelled, discarded, shed), its load and its connections' peers.
        case stats
        /// From the helper, unasked, to every connection: the box's speech work has reached its
        /// capacity (`busy`), or fallen below it (`work`, `capacity`); also in `hello`'s answer.
        case load
    }

    /// What the helper answers a request it cannot serve (`{"id": N, "error": code, "message": …}`).
    public enum ErrorCode: String, CaseIterable, Sendable, Equatable {
        case versionMismatch = "version_mismatch"
        case unknownOperation = "unknown_op"
        case badRequest = "bad_request"
        case unknownStream = "unknown_stream"
        case tooManyStreams = "too_many_streams"
        case noModel = "no_model"
        case overloaded
        case failed
    }

    /// This side's table, in the shape `parley_speech.py --contract` prints.
    public static var table: JSON {
        .object([("errors", .array(ErrorCode.allCases.map { .string($0.rawValue) })), ("max_header", .int(maxHeaderBytes)),
                 ("max_payload", .int(maxPayloadBytes)), ("ops", .array(Operation.allCases.map { .string($0.rawValue) })),
                 ("queue_per_connection", .int(queuePerConnection)), ("rates", .array(sampleRates.map { .int($0) })),
                 ("stream_seconds", .int(streamSeconds)), ("streams_per_connection", .int(streamsPerConnection)),
                 ("turn_seconds", .int(turnSeconds)), ("version", .int(version))])
    }
}

/// Why a request to the speech helper failed (`ModelError.failure`): the helper's error codes typed.
extension ModelFailure {
    /// The helper answered with `code`.
    public static func refused(_ code: SpeechHelperContract.ErrorCode) -> ModelFailure { .refused(code.rawValue) }

    /// The error's `code`, as the logs have always shown it.
    var speechHelperCode: String {
        switch self {
        case .timeout: "speech_helper_timeout"
        case .unavailable: "speech_helper_unavailable"
        case .refused: "speech_helper_error"
        }
    }
}

extension ModelError {
    /// A failure of the speech helper, its code from `failure`.
    public init(speechHelper failure: ModelFailure, message: String) {
        self.init(code: failure.speechHelperCode, message: message, retryable: failure != .refused(.badRequest), failure: failure)
    }
}
