import Testing
@testable import Media

/// The playout buffer as a value: scripted arrivals and playout ticks in, frames, holes and waits
/// out, with its counters adding up after every step.
@Suite struct JitterBufferTests {
    static let ms: UInt64 = 1_000_000
    static let frame: UInt64 = 20 * ms

    struct Arrival {
        var sequenceNumber: UInt16
        var timestamp: UInt32
        var payload: [UInt8]
        var at: UInt64
    }

    /// Frame `index` of a stream: sequence and timestamp from their starts, a payload naming it,
    /// sent at `index` frames and arriving `delay` later.
    static func arrival(_ index: Int, delay: UInt64 = 0, sequence: UInt16 = 0, timestamp: UInt32 = 0, samples: Int = 960) -> Arrival {
        Arrival(
            sequenceNumber: sequence &+ UInt16(truncatingIfNeeded: index),
            timestamp: timestamp &+ UInt32(truncatingIfNeeded: index * samples),
            payload: [UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)],
            at: UInt64(index) * frame + delay)
    }

    static func name(_ payload: [UInt8]) -> Int { Int(payload[0]) << 8 | Int(payload[1]) }

    static func checkCounters(_ buffer: JitterBuffer, sourceLocation: SourceLocation = #_sourceLocation) {
        let c = buffer.counters
        #expect(c.received == c.played + c.late + c.duplicate + c.overflow + c.discarded + buffer.buffered, sourceLocation: sourceLocation)
        #expect(buffer.buffered == buffer.occupiedSlots && buffer.buffered <= buffer.settings.capacity, sourceLocation: sourceLocation)
    }

    /// Plays `ticks` ticks, one a frame from `phase`; before each, the packets that have arrived by
    /// then are inserted, earliest first. Returns each tick's output.
    static func play(_ buffer: inout JitterBuffer, _ arrivals: [Arrival], ticks: Int, phase: UInt64 = 7 * ms) -> [JitterBuffer.Output] {
        let pending = arrivals.sorted { $0.at < $1.at }
        var next = 0
        var outputs: [JitterBuffer.Output] = []
        for tick in 0..<ticks {
            let now = phase + UInt64(tick) * frame
            while next < pending.count && pending[next].at <= now {
                let a = pending[next]
                buffer.insert(payload: a.payload, sequenceNumber: a.sequenceNumber, timestamp: a.timestamp, now: a.at)
                next += 1
                checkCounters(buffer)
            }
            outputs.append(buffer.pop(now: now))
            checkCounters(buffer)
        }
        return outputs
    }

    static func frames(_ outputs: [JitterBuffer.Output]) -> [Int] {
        outputs.compactMap { if case .frame(let payload) = $0 { name(payload) } else { nil } }
    }

    static func missingCount(_ outputs: [JitterBuffer.Output]) -> Int {
        outputs.filter { if case .missing = $0 { true } else { false } }.count
    }

    @Test func beforeAnyPacketAPopIsWaiting() {
        var buffer = JitterBuffer()
        #expect(buffer.pop(now: 0) == .waiting)
        #expect(buffer.counters == JitterBuffer.Counters())
    }

    @Test func playoutStartsTwoFramesAfterTheFirstPacketArrives() {
        var buffer = JitterBuffer()
        buffer.insert(payload: [1], sequenceNumber: 5, timestamp: 100, now: 1_000 * Self.ms)
        #expect(buffer.pop(now: 1_000 * Self.ms) == .waiting)
        #expect(buffer.pop(now: 1_020 * Self.ms) == .waiting)
        #expect(buffer.pop(now: 1_040 * Self.ms) == .frame([1]))
        #expect(buffer.counters.played == 1)
    }

    @Test func aSteadyStreamPlaysEveryFrameInOrderAcrossSequenceAndTimestampWraps() {
        var buffer = JitterBuffer()
        let arrivals = (0..<300).map { Self.arrival($0, sequence: 65400, timestamp: .max - 960 * 150 + 1) }
        let outputs = Self.play(&buffer, arrivals, ticks: 305)
        #expect(Self.frames(outputs) == Array(0..<300))
        #expect(outputs.prefix(2).allSatisfy { $0 == .waiting })
        #expect(buffer.counters.concealed == 3 && buffer.counters.late == 0 && buffer.counters.resyncs == 0)
    }

    @Test func g711At8kHzPlaysLikeOpus() {
        var buffer = JitterBuffer(settings: .g711)
        let arrivals = (0..<100).map { Self.arrival($0, sequence: 1, timestamp: 77, samples: 160) }
        #expect(Self.frames(Self.play(&buffer, arrivals, ticks: 103)) == Array(0..<100))
    }

    @Test func underLossReorderingAndJitterEveryFramePlaysOnceInOrderWithHolesOnlyForTheLost() throws {
        var random = SplitMix64(seed: 20_251_125)
        var arrivals: [Arrival] = []
        var lost = Set<Int>()
        let count = 3000
        for i in 0..<count {
            // 5 % lost; the rest delayed 0...35 ms, which reorders neighbours (a frame is 20 ms).
            if i > 0 && random.next() % 100 < 5 {
                lost.insert(i)
                continue
            }
            arrivals.append(Self.arrival(i, delay: random.next() % (35 * Self.ms), sequence: 40000, timestamp: 123_456_789))
        }
        #expect(Double(lost.count) / Double(count) > 0.04)
        var buffer = JitterBuffer()
        let outputs = Self.play(&buffer, arrivals, ticks: count + 3)
        let arrivalOf = Dictionary(uniqueKeysWithValues: arrivals.map { (Self.name($0.payload), $0.at) })

        // Walk the outputs: frames in order, each hole standing for a lost frame.
        var expected = 0
        var offered = 0
        for (tick, output) in outputs.enumerated() {
            switch output {
            case .waiting:
                #expect(expected == 0 || expected == count, "waiting at tick \(tick) in the stream")
            case .frame(let payload):
                #expect(Self.name(payload) == expected)
                expected += 1
            case .missing(let next):
                guard expected < count else { break }
                #expect(lost.contains(expected), "a hole at frame \(expected), which arrived")
                // FEC is offered when the next frame has arrived by this tick.
                let now = 7 * Self.ms + UInt64(tick) * Self.frame
                let nextArrived = arrivalOf[expected + 1].map { $0 <= now } ?? false
                #expect((next != nil) == nextArrived, "frame \(expected + 1) arrived \(nextArrived), offered \(next != nil)")
                if let next {
                    #expect(Self.name(next) == expected + 1)
                    offered += 1
                }
                expected += 1
            }
        }
        #expect(expected == count)
        #expect(offered > lost.count / 2)
        let c = buffer.counters
        #expect(c.played == count - lost.count && c.late == 0 && c.duplicate == 0 && c.overflow == 0 && c.discarded == 0)
    }

    @Test func aDuplicateIsDroppedAndCounted() {
        var buffer = JitterBuffer()
        let arrivals = (0..<10).map { Self.arrival($0) } + [Self.arrival(3, delay: 5 * Self.ms)]
        #expect(Self.frames(Self.play(&buffer, arrivals, ticks: 12)) == Array(0..<10))
        #expect(buffer.counters.duplicate == 1)
    }

    @Test func aPacketAfterItsSlotPlayedIsLateAndTheDelayGrowsByItsLateness() {
        var buffer = JitterBuffer()
        // From frame 20 on the path is 60 ms slower: frame 20 comes one frame after its slot (40 ms
        // of delay and 7 ms to the tick were not enough).
        let arrivals = (0..<200).map { Self.arrival($0, delay: $0 >= 20 ? 60 * Self.ms : 0) }
        let outputs = Self.play(&buffer, arrivals, ticks: 205)
        #expect(buffer.counters.late == 1)
        #expect(buffer.delayFrames == 3)
        // Held one tick (a concealed frame) and then nothing more is late.
        #expect(Self.frames(outputs) == Array(0..<20) + Array(21..<200))
        #expect(buffer.counters.resyncs == 0)
    }

    @Test func theDelayGrowsNoFurtherThanItsCap() {
        var buffer = JitterBuffer()
        // One packet half a second late among packets on time: the delay grows to the cap, not by 25 frames.
        let arrivals = (0..<100).map { Self.arrival($0, delay: $0 == 50 ? 500 * Self.ms : 0) }
        let outputs = Self.play(&buffer, arrivals, ticks: 112)
        #expect(buffer.counters.late == 1)
        #expect(buffer.delayFrames == buffer.settings.maxDelayFrames)
        #expect(Self.frames(outputs) == Array(0..<100).filter { $0 != 50 })
    }

    @Test func anExcessDelayShrinksOneFrameAWindowBackToTheStartUpDelay() {
        var buffer = JitterBuffer()
        // Frames 10...14 come 80 ms late (the delay grows by two frames), then every frame is on
        // time again: four frames of margin where two do.
        let arrivals = (0..<1000).map { Self.arrival($0, delay: (10..<15).contains($0) ? 80 * Self.ms : 0) }
        let outputs = Self.play(&buffer, arrivals, ticks: 1000)
        let c = buffer.counters
        #expect(c.late == 2)
        // One frame dropped a window (100 packets), twice, and then the margin is the start-up's.
        #expect(c.discarded == 2)
        #expect(buffer.delayFrames == 2)
        let played = Self.frames(outputs)
        #expect(played == played.sorted() && Set(played).count == played.count)
    }

    @Test func aSendersSilenceConcealsAFewFramesAndThenWaitsAndTheNextTalkSpurtPlaysOnTime() {
        var buffer = JitterBuffer()
        // 50 frames, two seconds of DTX (no packets; the timestamps and the clock move on, the
        // sequence numbers do not), 50 frames.
        var arrivals = (0..<50).map { Self.arrival($0) }
        for i in 150..<200 {
            var a = Self.arrival(i)
            a.sequenceNumber = UInt16(i - 100)
            arrivals.append(a)
        }
        let outputs = Self.play(&buffer, arrivals, ticks: 205)
        #expect(Self.frames(outputs) == Array(0..<50) + Array(150..<200))
        #expect(Self.missingCount(Array(outputs.prefix(160))) == buffer.settings.missingBeforeWaiting)
        #expect(buffer.counters.resyncs == 0)
        // The spurt starts at the same tick its first frame would have had without the silence.
        #expect(outputs[152] == .frame([0, 150]))
    }

    @Test func aPauseWithTheNextPacketQueuedAndNoSequenceGapIsSilenceNotAHole() {
        var buffer = JitterBuffer()
        // Frames 0...9, then the sender skips frames 10 and 11 (its sequence numbers run on) and
        // its frame 12 arrives early, in time to be queued across the pause.
        var arrivals = (0..<10).map { Self.arrival($0) }
        for i in 12..<20 {
            var a = Self.arrival(i, delay: 0)
            a.sequenceNumber = UInt16(i - 2)
            a.at = a.at >= 40 * Self.ms ? a.at - 40 * Self.ms : 0
            arrivals.append(a)
        }
        let outputs = Self.play(&buffer, arrivals, ticks: 23)
        #expect(Self.frames(outputs) == Array(0..<10) + Array(12..<20))
        #expect(Array(outputs[12..<14]) == [.waiting, .waiting])
        #expect(Self.missingCount(Array(outputs.prefix(22))) == 0)
    }

    @Test func aNewSSRCsJumpInSequenceAndTimestampRestartsInsteadOfFloodingHoles() {
        var buffer = JitterBuffer()
        var arrivals = (0..<50).map { Self.arrival($0, sequence: 100, timestamp: 5000) }
        arrivals += (50..<100).map { Self.arrival($0, sequence: 9000, timestamp: 3_000_000_000) }
        let outputs = Self.play(&buffer, arrivals, ticks: 105)
        // The old source's two queued frames are dropped; the new one starts after the start-up delay.
        #expect(Self.frames(outputs) == Array(0..<48) + Array(50..<100))
        #expect(buffer.counters.resyncs == 1 && buffer.counters.discarded == 2)
        #expect(Self.missingCount(Array(outputs.prefix(100))) == 0)
    }

    @Test func aTalkSpurtWhoseTimestampsDidNotMoveOnThroughTheSilenceRestarts() {
        var buffer = JitterBuffer()
        // Frames 0...29, half a second of silence, then frames 30... sent with the timestamps
        // they would have had without it: behind the playout point, but newer than all before.
        var arrivals = (0..<30).map { Self.arrival($0) }
        for i in 30..<80 {
            var a = Self.arrival(i)
            a.at += 500 * Self.ms
            arrivals.append(a)
        }
        let outputs = Self.play(&buffer, arrivals, ticks: 110)
        #expect(Self.frames(outputs) == Array(0..<80))
        #expect(buffer.counters.resyncs == 1 && buffer.counters.late == 0)
    }

    @Test func overflowDropsTheOldestFrames() {
        var buffer = JitterBuffer()
        for i in 0..<60 {
            let a = Self.arrival(i)
            buffer.insert(payload: a.payload, sequenceNumber: a.sequenceNumber, timestamp: a.timestamp, now: 0)
        }
        #expect(buffer.buffered == 50 && buffer.counters.overflow == 10)
        Self.checkCounters(buffer)
        #expect(buffer.pop(now: 40 * Self.ms) == .frame([0, 10]))
    }

    @Test func aFloodStaysWithinTheCapacity() {
        var buffer = JitterBuffer()
        var random = SplitMix64(seed: 7)
        for i in 0..<20000 {
            let sequence = i < 10000 ? UInt16(truncatingIfNeeded: i) : UInt16(truncatingIfNeeded: random.next())
            let timestamp = i < 10000 ? UInt32(truncatingIfNeeded: i * 960) : UInt32(truncatingIfNeeded: random.next())
            buffer.insert(payload: [UInt8](repeating: 0, count: 100), sequenceNumber: sequence, timestamp: timestamp, now: UInt64(i) * Self.ms)
            if i % 7 == 0 { _ = buffer.pop(now: UInt64(i) * Self.ms) }
            #expect(buffer.buffered <= buffer.settings.capacity)
        }
        Self.checkCounters(buffer)
        #expect(buffer.counters.overflow > 0)
    }

    @Test func aHoleOffersTheNextPacketForFEC() {
        var buffer = JitterBuffer()
        let arrivals = (0..<10).filter { $0 != 4 }.map { Self.arrival($0) }
        let outputs = Self.play(&buffer, arrivals, ticks: 12)
        #expect(outputs[6] == .missing(next: [0, 5]))
        #expect(outputs[7] == .frame([0, 5]))
    }
}

/// A small seeded generator (SplitMix64), so a failing schedule replays exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
