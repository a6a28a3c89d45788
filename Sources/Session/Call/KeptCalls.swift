import Loop
import Server

/// Ended calls kept readable (issue 73): listed by id for `keepSeconds` after their end, so that a
/// sideband that attaches late gets the call's story and a close that says how it ended, and `GET`
/// on the call's URL answers. Each loop keeps its own, oldest first out, at most `limit` (a trunk
/// taking 390 calls a second, `make bench-sip`'s ramp, would otherwise keep 117,000 for five
/// minutes); what they hold is accounted under `ended_calls`.
final class KeptCalls {
    static let keepSeconds = 300.0
    static let limit = 1_000

    private let loop: EventLoop
    private var kept: [(line: CallLine, until: UInt64, bytes: Int)] = []
    private var head = 0
    private var timer: ScheduledTask?
    private var memory: MemoryAccount
    private var bytes = 0

    private init(loop: EventLoop) {
        self.loop = loop
        memory = MemoryAccount(.endedCalls, on: loop)
    }

    static func on(_ loop: EventLoop) -> KeptCalls { loop.local { KeptCalls(loop: loop) } }

    var count: Int { kept.count - head }

    /// `line` has ended: kept until its time is up, or the oldest of more than `limit`.
    func keep(_ line: CallLine) {
        let held = line.heapBytes + MemoryLayout<(CallLine, UInt64, Int)>.stride
        kept.append((line, loop.nanoseconds() &+ UInt64(Self.keepSeconds * 1e9), held))
        bytes += held
        while count > Self.limit { forgetOldest() }
        account()
        if timer == nil { schedule() }
    }

    private func forgetOldest() {
        let oldest = kept[head]
        head += 1
        bytes -= oldest.bytes
        CallDirectory.shared.remove(oldest.line.id, oldest.line)
        if head > 256, head * 2 > kept.count {
            kept.removeFirst(head)
            head = 0
        }
    }

    private func schedule() {
        guard head < kept.count else { return timer = nil }
        let now = loop.nanoseconds(), until = kept[head].until
        timer = loop.schedule(after: Double(until > now ? until - now : 0) / 1e9) { [weak self] in self?.expire() }
    }

    private func expire() {
        let now = loop.nanoseconds()
        while head < kept.count, kept[head].until <= now { forgetOldest() }
        if head == kept.count {
            kept.removeAll(keepingCapacity: false)
            head = 0
        }
        account()
        schedule()
    }

    private func account() { memory.report(bytes == 0 ? 0 : HeapSize.of(kept) + bytes) }
}
