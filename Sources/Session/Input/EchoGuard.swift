import Codec
import SessionEngine

/// Discounts a reply's own audio from what the session hears, for clients that play replies with
/// no echo cancellation of their own (phone calls; pcm16 clients that say so): the reply's audio,
/// at the engine's input rate, is laid on a timeline at the moments the client plays it, and each
/// 10 ms of input is matched with the reference of its own moment, run through libspeexdsp's echo
/// canceller, then through `EchoGate`, before the VAD and the recogniser hear it.
///
/// Alignment. A reply piece sent with the pace's position p (ms into the reply) plays at the
/// client about when the pace's clock reaches p: `SpeechOutput` sends `leadMs` ahead, the client
/// starts playing on the first piece. An input frame's capture time is its arrival less its own
/// duration, on a stream clock that keeps the earliest alignment seen (as `AudioStreamClock`),
/// allowed to drift later by 5 % of the audio's time so that a burst at the start (a client
/// flushing what it had) is forgotten within seconds. The echo then lags its reference by the
/// speaker-to-microphone path plus the network's two ways, all positive: the canceller's 300 ms
/// tail covers them, and the gate's 400 ms window covers them with room for error (800 ms on a
/// phone line, whose echo comes back after the network's round trip too: `EchoGate.Settings.phoneLine`).
///
/// Why both, measured (docs/benchmarks.md, EchoGuardEndToEndTests with either stage switched off):
/// the canceller alone lets the reply interrupt itself in every case (it takes seconds to learn
/// the echo path; the VAD hears the echo in 100 ms); the gate alone stops every self-interruption;
/// with the canceller first the echo under what the gate passes (the user's words, its hangover)
/// is smaller too: 37 dB off a -10 dB echo over 30 s against the gate's 29, and a "stop" six
/// seconds into a reply that the gate alone once let resume was a barge-in with both. The
/// canceller is most of the cost (about 124 µs per 20 ms frame at 16 kHz against the gate's 22,
/// 63 against 12 at 8 kHz; 229 KiB against 34), so `--echo-canceller off` leaves the gate alone.
///
/// Made when the first reply audio for a guarded session is sent and let go with the input codec
/// (after `SessionDriver.codecIdleSeconds` without audio), so an idle session pays nothing.
/// Between replies (no reference within the gate's window) input passes untouched and uncopied.
package final class EchoGuard {
    /// The reference kept: the 300 ms lead ahead of the pace and the tail behind, with room.
    static let ringSeconds = 1
    static let tailMs = 300

    package let sampleRate: Int
    private let frame: Int
    private let canceller: EchoCanceller?
    private var gate: EchoGate
    private let epoch: UInt64
    private var ring: [Int16]
    /// Timeline position (samples since `epoch`) just past the last reference written.
    private var writtenEnd = 0
    /// Input short of a whole frame, and the timeline position of its first sample.
    private var pending: [Int16] = []
    private var scratch: [Int16]
    private var reference: [Int16]
    private var origin: UInt64?
    private var audioNanoseconds: UInt64 = 0
    private var lastArrival: UInt64 = 0
    /// The last `preRollFrames` frames, held back while the gate is on with the gain it gave each:
    /// when the user's speech crosses the gate, the frames before it (a word's quiet onset, the
    /// "s" of "stop") are let through whole instead of held down, at the cost of that much delay
    /// during a reply only.
    static let preRollFrames = 6
    private var delayed: [Int16]
    private var delayedGains: [Float]
    private var delayedCount = 0
    /// 10 ms frames run through the canceller, and held by the gate, since the last `takeCounts`.
    private var cancelled = 0
    private var held = 0

    /// `cancels` false: the gate alone (what `parley-load echo-guard` compares the canceller with).
    /// `gate`: the gate's settings (a phone line's window is longer: `EchoGate.Settings.phoneLine`).
    package init(sampleRate: Int, now: UInt64, cancels: Bool = true, gate: EchoGate.Settings = .init()) {
        self.sampleRate = sampleRate
        self.gate = EchoGate(settings: gate)
        frame = sampleRate / 1000 * EchoGate.frameMs
        epoch = now
        // Without the canceller (it could not be made), the gate alone still guards.
        canceller = cancels ? try? EchoCanceller(sampleRate: sampleRate, tailMs: Self.tailMs) : nil
        ring = [Int16](repeating: 0, count: sampleRate * Self.ringSeconds)
        scratch = [Int16](repeating: 0, count: frame)
        reference = [Int16](repeating: 0, count: frame)
        pending.reserveCapacity(frame)
        delayed = [Int16](repeating: 0, count: frame * (Self.preRollFrames + 1))
        delayedGains = [Float](repeating: 1, count: Self.preRollFrames + 1)
    }

    package var stateBytes: Int { (canceller?.stateBytes ?? 0) + (ring.count + pending.capacity + scratch.count + reference.count + delayed.count) * 2 + delayedGains.count * 4 + 200 }

    private func position(_ time: UInt64) -> Int {
        // In microseconds first, so that no product overflows however long a call lasts.
        let micros = Int64(bitPattern: time &- epoch) / 1_000
        return Int(micros * Int64(sampleRate) / 1_000_000)
    }

    /// A piece of reply audio (at `sampleRate`) that the client plays from `playsAt`.
    package func reply(_ samples: [Int16], playsAt: UInt64) {
        guard !samples.isEmpty else { return }
        var start = position(playsAt)
        let size = ring.count
        // What would not fit is the oldest part, already behind anything still to be heard.
        var samples = samples[...]
        if samples.count > size {
            start += samples.count - size
            samples = samples.suffix(size)
        }
        guard start + samples.count > writtenEnd - size else { return }
        // A gap since the last piece (a pause) is silence, not what the ring held a second ago.
        if start > writtenEnd {
            for p in max(writtenEnd, start - size)..<start { ring[p % size] = 0 }
        }
        for (i, sample) in samples.enumerated() where start + i >= 0 { ring[(start + i) % size] = sample }
        writtenEnd = max(writtenEnd, start + samples.count)
    }

    /// The input as the VAD should hear it; `duration` is the input's length in time (before any
    /// resampling), `arrived` when it came. The output may be a few samples shorter or longer
    /// than the input: whole 10 ms frames go through, the rest waits for the next input.
    package func process(_ input: [Int16], arrived: UInt64, duration: UInt64) -> [Int16] {
        let capture = captureTime(arrived: arrived, duration: duration)
        let start = position(capture) - pending.count
        let windowSamples = gate.settings.windowMs * sampleRate / 1000
        // Between replies nothing is copied: no reference near, and the gate's tail is over.
        if pending.isEmpty, delayedCount == 0, !gate.replyAudible, writtenEnd <= start - windowSamples || writtenEnd == 0 {
            return input
        }
        pending += input
        let whole = pending.count / frame * frame
        var output = [Int16]()
        output.reserveCapacity(whole + delayedCount * frame)
        for offset in stride(from: 0, to: whole, by: frame) {
            fillReference(at: start + offset)
            for i in 0..<frame { scratch[i] = pending[offset + i] }
            if let canceller {
                let done: Bool = scratch.withUnsafeMutableBufferPointer { out in
                    reference.withUnsafeBufferPointer { ref in
                        pending.withUnsafeBufferPointer { all in
                            let mic = UnsafeBufferPointer(rebasing: all[offset..<(offset + frame)])
                            return (try? canceller.process(microphone: mic, reference: ref, into: out)) != nil
                        }
                    }
                }
                if done { cancelled += 1 }
            }
            switch gate.frame(referenceDB: PCM.dBFS(reference), inputDB: PCM.dBFS(scratch)) {
            case .open:
                // The gate is off: what it held back goes first, then nothing is held back.
                flushDelayed(into: &output, upTo: 0)
                output += scratch
            case .passed:
                for i in 0..<delayedCount { delayedGains[i] = 1 }
                delay(scratch, gain: 1, into: &output)
            case .held(let gain):
                held += 1
                delay(scratch, gain: gain, into: &output)
            }
        }
        pending.removeFirst(whole)
        return output
    }

    /// Puts a frame behind the pre-roll; the oldest, once there are more than `preRollFrames`,
    /// goes out with its gain.
    private func delay(_ frame: [Int16], gain: Float, into output: inout [Int16]) {
        let size = self.frame
        let at = delayedCount * size
        delayed.withUnsafeMutableBufferPointer { to in
            frame.withUnsafeBufferPointer { from in
                to.baseAddress!.advanced(by: at).update(from: from.baseAddress!, count: size)
            }
        }
        delayedGains[delayedCount] = gain
        delayedCount += 1
        flushDelayed(into: &output, upTo: Self.preRollFrames)
    }

    /// Sends the oldest held-back frames until `upTo` remain.
    private func flushDelayed(into output: inout [Int16], upTo remaining: Int) {
        let size = frame
        let out = max(0, delayedCount - remaining)
        guard out > 0 else { return }
        for f in 0..<out {
            let gain = delayedGains[f]
            let frameRange = (f * size)..<((f + 1) * size)
            if gain >= 1 {
                output.append(contentsOf: delayed[frameRange])
            } else {
                for i in frameRange { output.append(Int16(Float(delayed[i]) * gain)) }
            }
        }
        // The rest move to the front (a few frames: simpler than a ring, and as cheap). The
        // regions may overlap, and the copy runs from low addresses up, as the move needs.
        let rest = delayedCount - out
        if rest > 0 {
            delayed.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress!
                for i in 0..<(rest * size) { base[i] = base[out * size + i] }
            }
            for f in 0..<rest { delayedGains[f] = delayedGains[out + f] }
        }
        delayedCount = rest
    }

    /// What it still holds (input short of a frame, the pre-roll), as it came: for a session that
    /// turns the guard off, so that the engine's audio clock loses no samples.
    package func flush() -> [Int16] {
        var output: [Int16] = []
        flushDelayed(into: &output, upTo: 0)
        output += pending
        pending.removeAll(keepingCapacity: true)
        return output
    }

    /// Frames cancelled and held since the last call.
    package func takeCounts() -> (cancelled: Int, held: Int) {
        defer { cancelled = 0; held = 0 }
        return (cancelled, held)
    }

    private func fillReference(at start: Int) {
        let size = ring.count
        for i in 0..<frame {
            let p = start + i
            reference[i] = p >= 0 && p < writtenEnd && p >= writtenEnd - size ? ring[p % size] : 0
        }
    }

    /// When the input's first sample was captured, by the stream's clock: the earliest alignment
    /// seen (arrival less the audio before it and its own length), drifting later by 5 % of the
    /// audio's time; a pause of over a second starts a new stream.
    private func captureTime(arrived: UInt64, duration: UInt64) -> UInt64 {
        if origin == nil || arrived &- lastArrival > 1_000_000_000 {
            origin = nil
            audioNanoseconds = 0
        }
        let earliest = arrived &- audioNanoseconds &- duration
        let aligned = origin.map { min($0 &+ duration / 20, earliest) } ?? earliest
        origin = aligned
        lastArrival = arrived
        let capture = aligned &+ audioNanoseconds
        audioNanoseconds &+= duration
        return capture
    }
}
