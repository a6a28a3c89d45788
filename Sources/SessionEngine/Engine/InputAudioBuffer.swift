/// The user's audio since the last commit, as the engine keeps it: a count of every sample, and the
/// samples themselves only as far as a transcriber could want them (the last 30 seconds, 31 at
/// most between drops).
///
/// Nothing is allocated until audio arrives, and the storage is released at every commit and
/// clear, so an idle or listening-only session holds no audio. Samples are mono at the session's
/// rate (16 kHz, or 8 kHz for G.711 input); the clock that `audio_start_ms` counts on is kept in
/// milliseconds across a change of rate.
package struct InputAudioBuffer: Sendable {
    package static let maxSeconds = 30

    private(set) var sampleRate: Int
    private(set) var samples: [Int16] = []
    /// Samples that belong to the next item, including any dropped past the cap.
    private(set) var pendingSamples = 0
    /// Samples appended at this rate; with `msBeforeRate`, the session's audio clock.
    private var totalSamples = 0
    /// Milliseconds of audio appended before the rate last changed.
    private var msBeforeRate = 0

    package init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    package var samplesPerMs: Int { sampleRate / 1000 }
    package var pendingMs: Int { pendingSamples / samplesPerMs }
    /// Milliseconds of audio in the whole session.
    package var totalMs: Int { msBeforeRate + totalSamples / samplesPerMs }
    package var heapBytes: Int { samples.capacity * MemoryLayout<Int16>.stride }

    package mutating func append(_ new: [Int16]) {
        samples += new
        pendingSamples += new.count
        totalSamples += new.count
        // Past the cap the oldest audio is dropped a second at a time, so a long turn moves the
        // buffer's contents once a second rather than on every append.
        let maxSamples = Self.maxSeconds * sampleRate
        if samples.count > maxSamples + sampleRate {
            samples.removeFirst(samples.count - maxSamples)
        }
    }

    /// Keeps only the last `ms` (up to a quarter more) as the next item's audio: audio before a
    /// turn starts is not part of it, beyond the padding the detector may reach back for. Called
    /// on every append between turns, so the storage is held to what that needs: the kept audio,
    /// the quarter, and a frame of up to `frameSlackMs`. Left to grow by doubling from the first
    /// 20 ms frame it reached 20,992 samples (41 KiB, most of a live microphone's memory) for the
    /// default 500 ms; it holds 11,600 (23 KiB). The quarter moves the kept audio (16 KB) once
    /// every 125 ms of frames, 128 KB a second, where trimming at every frame would move it
    /// fifty times.
    package mutating func keepLast(ms: Int) {
        let count = ms * samplesPerMs
        let limit = count + count / 4
        if samples.count > limit { samples.removeFirst(samples.count - count) }
        let room = limit + Self.frameSlackMs * samplesPerMs
        if samples.capacity < room || samples.capacity > 2 * room {
            var held = [Int16]()
            held.reserveCapacity(room)
            held += samples
            samples = held
        }
        pendingSamples = samples.count
    }

    /// The longest append `keepLast` leaves room for without growing (the API allows any length;
    /// microphones send 20 to 100 ms).
    package static let frameSlackMs = 100

    /// Starts the next item at `ms` of the session's audio, as far back as the buffer reaches.
    package mutating func keep(fromMs ms: Int) {
        let first = totalSamples - samples.count
        let drop = min(samples.count, max(0, (ms - msBeforeRate) * samplesPerMs - first))
        samples.removeFirst(drop)
        pendingSamples = samples.count
    }

    /// A reopened turn: the withdrawn item's audio goes back before what the buffer holds (the
    /// new speech and its padding), so the two halves are one item's audio. The clock is not moved.
    package mutating func prepend(_ earlier: [Int16]) {
        samples = earlier + samples
        pendingSamples = samples.count
    }

    /// The samples of the item being committed; the buffer is empty and released afterwards.
    package mutating func take() -> [Int16] {
        defer { clear() }
        return samples
    }

    package mutating func clear() {
        samples = []
        pendingSamples = 0
    }

    /// The input format changed to one heard at another rate: audio at the old rate cannot join
    /// audio at the new, so what is buffered is dropped; the clock goes on from where it was.
    package mutating func change(sampleRate rate: Int) {
        guard rate != sampleRate else { return }
        msBeforeRate = totalMs
        totalSamples = 0
        sampleRate = rate
        clear()
    }
}
