import Synchronization

/// Whether the speech helper (helpers/parley_speech.py) is up, shared by the process that runs it
/// (`parley serve`, which starts, watches and restarts it) and every loop's connection to it. Each
/// start that reaches `ready` is a new generation: a loop whose connection belongs to an older one
/// reconnects, and while the helper is down requests fail at once (the callers' fallback rules
/// serve) instead of waiting on a socket nobody answers.
///
/// A worker of `parley serve --workers N` uses its supervisor's helper (`init(sharedAt:)`): it
/// cannot see that helper's life, so it counts it up, and learns otherwise from its socket (a
/// connect refused fails a request at once; a connection that ends is made again at the next).
public final class SpeechHelperStatus: Sendable {
    /// The Unix socket the helper listens on.
    public let socketPath: String
    private let state = Mutex((ready: false, generation: 0))
    private let transcriptions = Atomic<Int>(0)
    private let busyFlag = Atomic<Bool>(false)

    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// The helper another process runs, at `socketPath`.
    public convenience init(sharedAt socketPath: String) {
        self.init(socketPath: socketPath)
        markReady()
    }

    /// The generation now serving, or nil while the helper is down or starting.
    public var readyGeneration: Int? {
        state.withLock { $0.ready ? $0.generation : nil }
    }

    /// The helper said `ready`.
    public func markReady() {
        state.withLock {
            $0.ready = true
            $0.generation += 1
        }
    }

    /// Transcriptions sent to the helper and not yet answered, from every loop: what says it is
    /// busy, so that the decodes nobody waits on (a turn's periodic partials) can wait their turn.
    public var transcriptionsInFlight: Int { transcriptions.load(ordering: .relaxed) }

    func transcriptionSent() { transcriptions.add(1, ordering: .relaxed) }
    func transcriptionEnded() { transcriptions.subtract(1, ordering: .relaxed) }

    /// Whether the box's speech work is at its capacity, as the helper last said (`load`): what
    /// `/readyz` answers 503 for, in every worker, since every worker's loops hear the same helper.
    public var isBusy: Bool { busyFlag.load(ordering: .relaxed) }

    func heard(busy: Bool) { busyFlag.store(busy, ordering: .relaxed) }

    /// The helper ended (or is being restarted): no work is queued at it any more.
    public func markDown() {
        state.withLock { $0.ready = false }
        busyFlag.store(false, ordering: .relaxed)
    }
}
