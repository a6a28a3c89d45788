import Metrics
import Synchronization

/// What other threads share with one loop: its wake-up descriptor, its inbox, its lag histogram
/// and the stop request. Everything else of a loop stays on the loop's own thread.
public final class LoopHandle: Sendable {
    public let index: Int
    let wakeFD: Int32
    /// Results of work offloaded to worker pools, on their way back.
    let inbox: LoopInbox
    /// How long each iteration spent handling ready events and timers: how late the next event can
    /// be served.
    public let lag: Histogram
    private let stopRequested = Atomic<Bool>(false)
    /// The loop's time: the machine's, or a test's (`ManualClock`).
    public let clock: LoopClock

    /// Seconds; the upper bounds of the iteration-lag histogram.
    public static let lagBounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    public init(index: Int, clock: LoopClock = .monotonic) throws(SystemError) {
        self.index = index
        self.clock = clock
        wakeFD = try Sys.eventfd()
        if case .manual(let manual) = clock { manual.bind(wakeFD: wakeFD) }
        inbox = LoopInbox(wakeFD: wakeFD)
        lag = Histogram(name: "parley_loop_iteration_seconds",
                        help: "Time an event-loop iteration spent handling ready events and timers: how late the next event can be served.",
                        bounds: Self.lagBounds, registry: nil)  // summed over the loops by the server (`SummedHistogram`)
    }

    /// Asks the loop to stop; callable from any thread. The loop runs its `onStopRequested`
    /// (a graceful drain) or, without one, stops at once.
    public func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        Sys.signal(eventfd: wakeFD)
    }

    /// Runs `body` on the loop's own thread, after what is already posted: how a session parked
    /// on one loop is handed a connection that arrived on another. Callable from any thread.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        inbox.post(LoopInbox.Delivery(ticket: LoopInbox.jobTicket, result: LoopInbox.Job(body: body)))
    }

    var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }
}
