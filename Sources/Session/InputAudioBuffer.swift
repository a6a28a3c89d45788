/// The user's audio since the last commit, as the engine keeps it: a count of every sample, and the
/// samples themselves only as far as a transcriber could want them (the last 30 seconds, 31 at
/// most between drops).
///
/// Nothing is allocated until audio arrives, and the storage is released at every commit and
/// clear, so an idle or listening-only session holds no audio. Samples are 16 kHz mono.
struct InputAudioBuffer: Sendable {
    static let samplesPerMs = VoiceActivityDetector.sampleRate / 1000
    static let maxSamples = 30 * VoiceActivityDetector.sampleRate
    /// Past the cap the oldest audio is dropped a second at a time, so a long turn moves the
    /// buffer's contents once a second rather than on every append.
    static let dropStep = VoiceActivityDetector.sampleRate

    private(set) var samples: [Int16] = []
    /// Samples that belong to the next item, including any dropped past the cap.
    private(set) var pendingSamples = 0
    /// Samples appended in the whole session: the clock that `audio_start_ms` counts on.
    private(set) var totalSamples = 0

    var pendingMs: Int { pendingSamples / Self.samplesPerMs }
    var totalMs: Int { totalSamples / Self.samplesPerMs }
    var heapBytes: Int { samples.capacity * MemoryLayout<Int16>.stride }

    mutating func append(_ new: [Int16]) {
        samples += new
        pendingSamples += new.count
        totalSamples += new.count
        if samples.count > Self.maxSamples + Self.dropStep {
            samples.removeFirst(samples.count - Self.maxSamples)
        }
    }

    /// Keeps only the last `count` samples (or up to twice that) as the next item's audio: audio
    /// before a turn starts is not part of it, beyond the padding the detector may reach back for.
    /// Trimming only once the buffer has doubled moves each sample about once, rather than the
    /// whole padding on every append of every listening session.
    mutating func keepLast(_ count: Int) {
        if samples.count > 2 * count { samples.removeFirst(samples.count - count) }
        pendingSamples = samples.count
    }

    /// Starts the next item at `sample` (counted from the session's first sample), as far back as
    /// the buffer reaches.
    mutating func keep(from sample: Int) {
        let first = totalSamples - samples.count
        let drop = min(samples.count, max(0, sample - first))
        samples.removeFirst(drop)
        pendingSamples = samples.count
    }

    /// The samples of the item being committed; the buffer is empty and released afterwards.
    mutating func take() -> [Int16] {
        defer { clear() }
        return samples
    }

    mutating func clear() {
        samples = []
        pendingSamples = 0
    }
}
