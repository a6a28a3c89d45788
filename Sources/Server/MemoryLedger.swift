import Loop
import Metrics

/// What everything on one loop that holds a session has accounted, by carrier: the bytes behind
/// `parley_accounted_bytes` and its breakdown, `parley_accounted_bytes_by_carrier`.
///
/// A connection counts under its endpoint's name (`http` until it upgrades, then `realtime`,
/// `twilio`, `live`...); what holds a session without a connection of its own counts under a
/// `Carrier` (a SIP call, a WebRTC call, a session parked or relayed after a resume). One counter
/// per carrier per loop, so that the loops do not share a cache line on the accounting path.
package final class MemoryLedger: Sendable {
    /// Holders of a session that are not a connection on the loop's own listening socket.
    package enum Carrier: Int, CaseIterable, Sendable {
        /// A connection on a stream port (SIP over TCP or TLS): its framer and buffers.
        case stream
        case sip
        case webRTC
        /// A session whose client went away within the resume window: the replay log and engine.
        case parked
        /// A session resumed from another loop: its state stays here, its socket there.
        case relayed
        /// Ended calls kept readable for a while (their story, for late sidebands and `GET`).
        case endedCalls

        var labelValue: String { ["stream", "sip", "webrtc", "parked", "relayed", "ended_calls"][rawValue] }
    }

    private let counters: [Counter]
    private let endpoints: Int

    /// `endpoints`: the server's endpoint count (`Router.endpointNames`), each a counter of its own.
    package init(endpoints: Int) {
        self.endpoints = endpoints
        counters = (0..<(endpoints + Carrier.allCases.count)).map { _ in Counter() }
    }

    /// The ledger of `loop`: the serving loop's, which /metrics reads; or, on a loop that serves
    /// nothing (a unit test's), one of its own that no scrape reads.
    package static func on(_ loop: EventLoop) -> MemoryLedger {
        loop.local { MemoryLedger(endpoints: 1) }
    }

    /// Makes this the ledger `on(loop)` answers: called once, as the serving loop starts.
    func install(on loop: EventLoop) {
        _ = loop.local { self }
    }

    /// A connection's counter: its endpoint's (0, plain HTTP, until it upgrades), or the stream
    /// carrier's for a connection on a stream port.
    func slot(endpoint: Int, stream: Bool) -> Int { stream ? endpoints + Carrier.stream.rawValue : endpoint }
    func counter(slot: Int) -> Counter { counters[slot] }
    func counter(_ carrier: Carrier) -> Counter { counters[endpoints + carrier.rawValue] }

    var total: Int { counters.reduce(0) { $0 + $1.current } }
    /// What connections and their sessions hold, relayed ones included: the total less calls,
    /// stream connections and parked sessions (`parley_accounted_bytes_per_connection`'s part).
    var connectionTotal: Int { total - [Carrier.sip, .webRTC, .stream, .parked, .endedCalls].reduce(0) { $0 + current($1) } }
    func current(endpoint: Int) -> Int { counters[endpoint].current }
    func current(_ carrier: Carrier) -> Int { counter(carrier).current }
}

/// One session holder's share of its loop's ledger: what it last reported, so that each report
/// adds only the change, and closing takes it all back. A holder reports when what it holds may
/// have changed (its session's account, a packet buffered, a message parsed); the figure is its
/// own estimate of its heap, by `HeapSize`'s rules: its objects as malloc gave them, its buffers'
/// capacities.
package struct MemoryAccount {
    private let counter: Counter
    private var bytes = 0

    package init(_ carrier: MemoryLedger.Carrier, on loop: EventLoop) {
        counter = MemoryLedger.on(loop).counter(carrier)
    }

    package mutating func report(_ now: Int) {
        guard now != bytes else { return }
        counter.add(now - bytes)
        bytes = now
    }

    /// The holder is gone: everything it accounted is taken back.
    package mutating func close() { report(0) }
}

/// A call's account (a SIP or WebRTC call): what the call holds itself, refreshed when that may
/// have changed (a dialog's step, a transport's output, and once a second of media for the
/// buffers), and what its session last reported, which it does after each batch of the session's
/// work, so often that a report must cost an add: it reuses the call's last figure.
package struct CallAccount {
    private var account: MemoryAccount
    private var own = 0
    private var session = 0
    private var ticks = 0
    private var closed = false

    package init(_ carrier: MemoryLedger.Carrier, on loop: EventLoop) {
        account = MemoryAccount(carrier, on: loop)
    }

    /// What the call holds itself, counted anew.
    package mutating func own(_ bytes: Int) {
        own = bytes
        if !closed { account.report(own + session) }
    }

    /// What the call's session holds, as it last said.
    package mutating func session(_ bytes: Int) {
        session = bytes
        if !closed { account.report(own + session) }
    }

    /// One 20 ms of the call's media went by: true once a second, when its buffers are counted anew.
    package mutating func tick() -> Bool {
        ticks &+= 1
        return ticks % 50 == 0
    }

    /// The call has ended: everything it accounted is taken back, and later reports are not.
    package mutating func close() {
        closed = true
        account.close()
    }
}
