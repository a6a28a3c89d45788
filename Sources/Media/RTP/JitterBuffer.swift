import Loop

/// The receive side's playout buffer for one audio stream of fixed-duration frames (20 ms: 960
/// samples at Opus's 48 kHz, 160 at G.711's 8 kHz), as a value: packets in with their arrival
/// time, one output per playout tick. No clock and no socket: the caller calls `pop` once per
/// frame duration and passes the time.
///
/// Frames are placed by timestamp in a ring of `capacity` slots whose first is the playout point,
/// the frame the next `pop` plays; sequence numbers tell a loss from a pause. So:
/// - a packet whose slot has passed is late: dropped and counted, and the delay grows by as many
///   frames as it was late (up to `maxDelayFrames`), by holding the playout point, one
///   concealed frame a tick (each the decoder's concealment, a stretch of the audio);
/// - when every packet of a window (`shrinkWindow`) came at least one frame earlier than the
///   start-up delay needs, the delay shrinks by one frame: one frame dropped (or, in silence,
///   one empty tick skipped). Growth is at once, shrinking one frame a window: slowly;
/// - a gap in the timestamps whose sequence numbers run on (the sender stopped sending in
///   silence: Opus DTX, RFC 7587 section 3.1.3) is played as `.waiting`, not as holes; a gap
///   with packets missing is `.missing`, offering the next packet for Opus's in-band FEC
///   (RFC 6716 section 2.1.7), which carries the missing frame at a lower rate;
/// - with nothing queued, a few ticks are `.missing` (the decoder's concealment fades out) and
///   then `.waiting`, however long the sender is silent; the playout clock keeps running, so the
///   next talk spurt plays at its own time;
/// - a packet far from the playout point (more than `capacity` frames ahead, or behind it by more
///   than that, or behind it but newer than all before while the stream is silent: a new talk
///   spurt after DTX whose timestamps did not advance, a new SSRC) starts the buffer again.
///
/// Memory is bounded by `capacity` frames: a packet just beyond the ring's end makes room by
/// dropping the oldest frames (counted as overflow).
package struct JitterBuffer: Sendable {
    package struct Settings: Sendable, Equatable {
        package var clockRate = 48000
        package var samplesPerFrame = 960
        /// The delay a (re)start waits for before the first frame plays, and the least margin
        /// shrinking keeps.
        package var initialDelayFrames = 2
        /// The most the delay grows to: 200 ms of 20 ms frames.
        package var maxDelayFrames = 10
        /// Frames the ring holds: one second of 20 ms frames.
        package var capacity = 50
        /// Empty ticks concealed before `.waiting` (60 ms of concealment, fading out).
        package var missingBeforeWaiting = 3
        /// Packets over which the earliest margin is watched before the delay may shrink: about
        /// two seconds of 20 ms frames.
        package var shrinkWindow = 100

        package init(clockRate: Int = 48000, samplesPerFrame: Int = 960) {
            self.clockRate = clockRate
            self.samplesPerFrame = samplesPerFrame
        }

        /// Opus at 48 kHz in 20 ms frames (RFC 7587 section 4.1: the RTP clock is always 48 kHz).
        package static let opus = Settings(clockRate: 48000, samplesPerFrame: 960)
        /// G.711 (PCMU, PCMA) at 8 kHz in 20 ms frames (RFC 3551 section 4.5.14).
        package static let g711 = Settings(clockRate: 8000, samplesPerFrame: 160)

        package var frameNanoseconds: UInt64 { UInt64(samplesPerFrame) * 1_000_000_000 / UInt64(clockRate) }
    }

    package enum Output: Sendable, Equatable {
        /// The frame's payload, to decode.
        case frame([UInt8])
        /// A frame is missing: conceal it, or, given the next frame's packet, decode that packet's
        /// in-band FEC (Opus) in its place. The next packet stays queued and plays next tick.
        case missing(next: [UInt8]?)
        /// Nothing to play: not started yet, or the sender is silent. Play silence (or comfort
        /// noise).
        case waiting
    }

    /// Every packet inserted ends up in exactly one of played, late, duplicate, overflow,
    /// discarded, or is still buffered: `received` is their sum.
    package struct Counters: Sendable, Equatable {
        package var received = 0
        /// Frames returned by `.frame`.
        package var played = 0
        /// Ticks returned as `.missing`.
        package var concealed = 0
        /// Packets that came after their slot had played.
        package var late = 0
        /// Packets whose slot was already filled.
        package var duplicate = 0
        /// Packets dropped, oldest first, to make room.
        package var overflow = 0
        /// Frames dropped to shrink the delay, and those queued when the buffer restarted.
        package var discarded = 0
        /// Restarts on a timestamp jump.
        package var resyncs = 0
    }

    private struct Slot: Sendable {
        var sequenceNumber: UInt16
        var payload: [UInt8]
    }

    private enum State: Sendable, Equatable {
        case idle
        /// Started by a packet arriving at some time; plays from `startAt`.
        case buffering(startAt: UInt64)
        case playing
    }

    package let settings: Settings
    package private(set) var counters = Counters()
    /// Packets queued, at most `settings.capacity`.
    package private(set) var buffered = 0
    /// The delay a restart waits for, in frames: the start-up delay, grown by late packets and
    /// shrunk with the margin, within `initialDelayFrames...maxDelayFrames`.
    package private(set) var delayFrames: Int

    private var slots: [Slot?]
    /// The ring's slot for the playout point, and the point's timestamp.
    private var head = 0
    private var playout: UInt32 = 0
    private var state = State.idle
    /// The sequence number the playout point's frame should carry, if nothing is missing.
    private var expectedSequence: UInt16 = 0
    /// The newest sequence number queued or played.
    private var newestSequence: UInt16 = 0
    /// Ticks in a row with nothing queued.
    private var emptyTicks = 0
    /// Ticks still to hold the playout point (growth), frames still to drop (shrinking).
    private var pendingHold = 0
    private var pendingSkip = 0
    /// The least margin (frames between a packet's arrival and its playout) in this window.
    private var windowLeastMargin = Int.max
    private var windowPackets = 0

    /// What the ring holds on the heap: its slots and the payloads queued in them.
    package var heapBytes: Int {
        HeapSize.of(slots) + slots.reduce(0) { $0 + ($1.map { HeapSize.of($0.payload) } ?? 0) }
    }

    package init(settings: Settings = .opus) {
        precondition(settings.clockRate > 0 && settings.samplesPerFrame > 0, "clock rate and frame size")
        precondition(settings.capacity > settings.maxDelayFrames, "the ring holds more than the largest delay")
        precondition(
            settings.initialDelayFrames >= 0 && settings.initialDelayFrames <= settings.maxDelayFrames,
            "start-up delay within the largest")
        self.settings = settings
        delayFrames = settings.initialDelayFrames
        slots = Array(repeating: nil, count: settings.capacity)
    }

    /// Whether playout has started and nothing is queued past the concealment's few ticks.
    private var isSilent: Bool { state == .playing && buffered == 0 && emptyTicks >= settings.missingBeforeWaiting }

    // MARK: Insert

    /// Queues one packet's payload, arrived at `now` (monotonic nanoseconds).
    package mutating func insert(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, now: UInt64) {
        counters.received += 1
        guard state != .idle else { return restart(payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, now: now) }

        let capacity = settings.capacity
        let delta = Int(Int32(bitPattern: timestamp &- playout))
        // Floor division: a timestamp between frame boundaries belongs to the frame it falls in.
        var offset = delta / settings.samplesPerFrame
        if delta < 0 && delta % settings.samplesPerFrame != 0 { offset -= 1 }
        let newer = Int16(bitPattern: sequenceNumber &- newestSequence) > 0

        if offset < 0 {
            if case .buffering = state, let last = lastQueuedOffset(), last - offset < capacity {
                // Before playout starts, an earlier packet (reordered) moves the start back.
                moveBack(by: -offset)
                offset = 0
            } else if offset < -capacity || (newer && isSilent) {
                return restart(payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, now: now)
            } else {
                counters.late += 1
                if state == .playing { grow(by: -offset) }
                return
            }
        } else if offset >= capacity {
            guard offset < 2 * capacity, !isSilent else {
                return restart(payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, now: now)
            }
            dropOldest(offset - capacity + 1)
            offset = capacity - 1
        }

        let index = (head + offset) % capacity
        guard slots[index] == nil else {
            counters.duplicate += 1
            return
        }
        slots[index] = Slot(sequenceNumber: sequenceNumber, payload: payload)
        buffered += 1
        if newer { newestSequence = sequenceNumber }
        if state == .playing { watchMargin(offset) }
    }

    /// Starts again from this packet: what is queued is discarded (frames of another source, or of
    /// another timeline, cannot be ordered against it), and playout starts once the delay has passed.
    private mutating func restart(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, now: UInt64) {
        if state != .idle { counters.resyncs += 1 }
        for i in slots.indices where slots[i] != nil { slots[i] = nil }
        counters.discarded += buffered
        head = 0
        playout = timestamp
        slots[0] = Slot(sequenceNumber: sequenceNumber, payload: payload)
        buffered = 1
        expectedSequence = sequenceNumber
        newestSequence = sequenceNumber
        emptyTicks = 0
        pendingHold = 0
        pendingSkip = 0
        resetWindow()
        state = .buffering(startAt: now &+ UInt64(delayFrames) * settings.frameNanoseconds)
    }

    /// The playout point moves back `frames` frames (only before playout has started).
    private mutating func moveBack(by frames: Int) {
        head = (head - frames % settings.capacity + settings.capacity) % settings.capacity
        playout &-= UInt32(truncatingIfNeeded: frames * settings.samplesPerFrame)
        expectedSequence &-= UInt16(truncatingIfNeeded: frames)
    }

    /// Makes room at the ring's end: the oldest `frames` slots are dropped, the playout point
    /// moving past them.
    private mutating func dropOldest(_ frames: Int) {
        for _ in 0..<frames {
            if let slot = slots[head] {
                slots[head] = nil
                buffered -= 1
                counters.overflow += 1
                expectedSequence = slot.sequenceNumber &+ 1
            } else {
                expectedSequence &+= 1
            }
            advance()
        }
    }

    private func lastQueuedOffset() -> Int? {
        var offset = settings.capacity - 1
        while offset >= 0 {
            if slots[(head + offset) % settings.capacity] != nil { return offset }
            offset -= 1
        }
        return nil
    }

    private func firstQueuedOffset() -> Int? {
        for offset in 0..<settings.capacity where slots[(head + offset) % settings.capacity] != nil { return offset }
        return nil
    }

    // MARK: Adapting the delay

    /// A packet came `frames` frames late: hold the playout point that long, within the cap. Holds
    /// not yet taken count toward it (a burst of late packets asks for one growth, not a sum).
    private mutating func grow(by frames: Int) {
        let room = settings.maxDelayFrames - ((lastQueuedOffset() ?? -1) + 1)
        let hold = min(frames, room)
        guard hold > pendingHold else { return }
        delayFrames = min(settings.maxDelayFrames, delayFrames + hold - pendingHold)
        pendingHold = hold
        pendingSkip = 0
        resetWindow()
    }

    /// A packet queued `margin` frames ahead of the playout point. A window whose every packet had
    /// more margin than the start-up delay gives one frame back.
    private mutating func watchMargin(_ margin: Int) {
        windowLeastMargin = min(windowLeastMargin, margin)
        windowPackets += 1
        guard windowPackets >= settings.shrinkWindow else { return }
        if windowLeastMargin > settings.initialDelayFrames && pendingHold == 0 {
            pendingSkip += 1
            delayFrames = max(settings.initialDelayFrames, delayFrames - 1)
        }
        resetWindow()
    }

    private mutating func resetWindow() {
        windowLeastMargin = .max
        windowPackets = 0
    }

    // MARK: Pop

    /// The output for this playout tick at `now` (monotonic nanoseconds).
    package mutating func pop(now: UInt64) -> Output {
        switch state {
        case .idle: return .waiting
        case .buffering(let startAt):
            // Wrapping difference: `now` is monotonic, `startAt` just ahead of it.
            guard Int64(bitPattern: now &- startAt) >= 0 else { return .waiting }
            state = .playing
            // Overflow may have emptied the first slots: play from the earliest queued frame.
            if let first = firstQueuedOffset(), let slot = slots[(head + first) % settings.capacity] {
                for _ in 0..<first { advance() }
                expectedSequence = slot.sequenceNumber
            }
        case .playing: break
        }

        if pendingSkip > 0 {
            pendingSkip -= 1
            if let slot = slots[head] {
                slots[head] = nil
                buffered -= 1
                counters.discarded += 1
                expectedSequence = slot.sequenceNumber &+ 1
            }
            advance()
        }
        if pendingHold > 0 {
            // The playout point stays where it is this tick: in silence for nothing, in speech
            // as one concealed frame.
            pendingHold -= 1
            if isSilent { return .waiting }
            counters.concealed += 1
            return .missing(next: nil)
        }

        if let slot = slots[head] {
            slots[head] = nil
            buffered -= 1
            counters.played += 1
            expectedSequence = slot.sequenceNumber &+ 1
            emptyTicks = 0
            advance()
            return .frame(slot.payload)
        }

        if let first = firstQueuedOffset(), let queued = slots[(head + first) % settings.capacity] {
            emptyTicks = 0
            // Packets missing before the first queued one; if the gap in time is longer, its first
            // part is the sender's silence, and only its last `missing` frames are holes.
            let missing = max(0, Int(Int16(bitPattern: queued.sequenceNumber &- expectedSequence)))
            let next = slots[(head + 1) % settings.capacity]?.payload
            advance()
            guard first <= missing else { return .waiting }
            expectedSequence &+= 1
            counters.concealed += 1
            return .missing(next: next)
        }

        emptyTicks += 1
        advance()
        guard emptyTicks <= settings.missingBeforeWaiting else { return .waiting }
        expectedSequence &+= 1
        counters.concealed += 1
        return .missing(next: nil)
    }

    private mutating func advance() {
        head = (head + 1) % settings.capacity
        playout &+= UInt32(truncatingIfNeeded: settings.samplesPerFrame)
    }

    /// The slots holding a frame, counted (`buffered` kept by hand must equal it).
    var occupiedSlots: Int { slots.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }
}
