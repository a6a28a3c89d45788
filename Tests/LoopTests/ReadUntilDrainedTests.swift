import Testing
@testable import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The one read-until-EAGAIN loop: what it reads, what it hands on, and why it stops, against a
/// scripted source (no socket, so every outcome is reached on purpose).
@Suite struct ReadUntilDrainedTests {
    /// Answers each read with the next scripted result, writing `n` bytes of `fill` for a transfer.
    struct ScriptedSource: ReadSource {
        enum Step { case bytes(Int), wouldBlock, endOfFile, fail }
        var steps: [Step]
        var shortReadDrains: Bool
        var reads = 0
        var spaces: [Int] = []

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Sys.IOResult {
            reads += 1
            spaces.append(buffer.count)
            switch steps.removeFirst() {
            case .bytes(let n):
                for i in 0..<n { buffer[i] = UInt8(truncatingIfNeeded: reads) }
                return .transferred(n)
            case .wouldBlock: return .wouldBlock
            case .endOfFile: return .endOfFile
            case .fail: throw SystemError("recv", errno: ECONNRESET)
            }
        }
    }

    let loop: EventLoop
    let full = EventLoop.readHeadroom + EventLoop.readBufferBytes

    init() throws { loop = try EventLoop(handle: LoopHandle(index: 0)) }

    @Test func readsUntilWouldBlockAndHandsOnEachChunk() {
        var source = ScriptedSource(steps: [.bytes(full), .bytes(full), .wouldBlock], shortReadDrains: true)
        var chunks: [Int] = []
        let outcome = loop.readUntilDrained(from: &source) { chunks.append($0.count); return .readOn }
        #expect(outcome == .drained && chunks == [full, full] && source.reads == 3)
    }

    @Test func aShortReadFromASocketIsDrainedWithoutAnotherRead() {
        var source = ScriptedSource(steps: [.bytes(10), .wouldBlock], shortReadDrains: true)
        let outcome = loop.readUntilDrained(from: &source) { _ in .readOn }
        #expect(outcome == .drained && source.reads == 1)
    }

    @Test func aShortReadFromTLSReadsOnToWouldBlock() {
        var source = ScriptedSource(steps: [.bytes(10), .bytes(5), .wouldBlock], shortReadDrains: false)
        var chunks: [Int] = []
        let outcome = loop.readUntilDrained(from: &source) { chunks.append($0.count); return .readOn }
        #expect(outcome == .drained && chunks == [10, 5])
    }

    @Test func aHangUpReadsOnPastAShortReadToTheEndOfFile() {
        var source = ScriptedSource(steps: [.bytes(10), .endOfFile], shortReadDrains: true)
        let outcome = loop.readUntilDrained(from: &source, hungUp: true) { _ in .readOn }
        #expect(outcome == .endOfFile && source.reads == 2)
    }

    @Test func theOwnerStopsReading() {
        var source = ScriptedSource(steps: [.bytes(full), .bytes(full)], shortReadDrains: true)
        let outcome = loop.readUntilDrained(from: &source) { _ in .stop }
        #expect(outcome == .stopped && source.reads == 1)
    }

    @Test func aSpentBudgetLeavesTheRestForLater() {
        var source = ScriptedSource(steps: Array(repeating: .bytes(full), count: 5), shortReadDrains: true)
        let outcome = loop.readUntilDrained(from: &source, budget: 3) { _ in .readOn }
        #expect(outcome == .budgetSpent && source.reads == 3)
    }

    @Test func aFailedReadIsItsTypedError() {
        var source = ScriptedSource(steps: [.fail], shortReadDrains: true)
        let outcome = loop.readUntilDrained(from: &source) { _ in .readOn }
        #expect(outcome == .failed(SystemError("recv", errno: ECONNRESET)))
    }

    @Test func heldBytesGoInFrontOfTheReadAndCountInTheChunk() {
        var source = ScriptedSource(steps: [.bytes(4), .wouldBlock], shortReadDrains: false)
        var seen: [UInt8] = []
        let outcome = loop.readUntilDrained(from: &source, held: { buffer in
            buffer.copyBytes(from: [9, 9, 9])
            return 3
        }) { bytes in
            seen = Array(bytes)
            return .readOn
        }
        #expect(outcome == .drained && seen == [9, 9, 9, 1, 1, 1, 1] && source.spaces == [full - 3, full - 3])
    }
}
