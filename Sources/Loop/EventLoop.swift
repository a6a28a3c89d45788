
/// One event loop, shaped like Redis's `ae`: descriptors with callbacks, timers, and nothing else.
/// A thread runs it for its whole life; everything registered with it is called on that thread,
/// so nothing here takes a lock.
///
/// - Registrations live in a slab indexed by slot (O(1), no hash, no allocation per event); the
///   epoll token carries the slot and its generation.
/// - One timer facility (`LoopTimers`) for every deadline and tick: each registration's one
///   coarse deadline, and precise callbacks (`schedule(after:)`).
/// - One read buffer shared by everything on the loop, so idle sockets own none.
/// - Work for other threads (`offload`) comes back through the inbox and the wake-up eventfd.
/// - Two hooks for deferred work: after each event (`afterEachEvent`, where the server writes each
///   connection's corked output, as uWebSockets uncorks when a handler returns), and at the end of
///   the pass (`atEndOfPass`, Redis's `beforeSleep`): work done once per pass however many events
///   asked for it.
public final class EventLoop {
    private static let wakeToken = UInt64.max
    /// Room in front of the read buffer for a connection's pending partial frame.
    public static let readHeadroom = 256
    public static let readBufferBytes = 64 * 1024

    public let handle: LoopHandle
    private var epoll: Epoll
    /// The one read buffer of this loop, `readHeadroom + readBufferBytes` long; idle sockets own none.
    public let readBuffer: UnsafeMutableRawBufferPointer
    private var timers: LoopTimers

    /// The slab: registrants and their slots' generations, indexed by slot (12 bytes a slot).
    private var registrants: [LoopRegistrant?] = []
    private var generations: [UInt32] = []
    private var freeSlots: [Int32] = []
    /// The generation a slot grown anew starts at: past every generation of the slots
    /// `compactSlab` gave back, so that a registration kept from before never matches a new one.
    private var freshGeneration: UInt32 = 0
    /// Registrations to read again without a new edge: budget spent, or reading resumed.
    private var ready: [Registration] = []
    private var readyBatch: [Registration] = []
    /// Slots whose deadline passed this tick; kept to reuse its storage.
    private var expired: [Int32] = []
    /// Completions of offloaded work, by ticket, until its result arrives or it is cancelled.
    private var offloads: [UInt64: (any Sendable) -> Void] = [:]
    private var lastOffloadID: UInt64 = 0
    /// One object per type that upper layers keep per loop (the HTTP client's pool), see `local`.
    private var locals: [ObjectIdentifier: AnyObject] = [:]
    private var running = true
    /// A manual clock moved at the end of the last pass: its timers are due, so do not sleep.
    private var clockMoved = false
    private var clockHolds: [() -> Bool] = []
    private var stopHandled = false
    /// Run once per pass, after its events, queued reads and timers, before the next wait.
    private var endOfPass: [() -> Void] = []
    private var afterEvent: [() -> Void] = []

    /// Called once when `LoopHandle.requestStop` is seen; the owner drains and then calls `stop()`.
    /// Without it the loop stops at once.
    public var onStopRequested: (() -> Void)?

    public init(handle: LoopHandle) throws(SystemError) {
        self.handle = handle
        epoll = try Epoll()
        readBuffer = .allocate(byteCount: Self.readHeadroom + Self.readBufferBytes, alignment: 16)
        timers = LoopTimers(startNanoseconds: handle.clock.nanoseconds())
        try epoll.add(handle.wakeFD, [.readable, .edge], token: Self.wakeToken)
    }

    deinit {
        readBuffer.deallocate()
    }

    // MARK: Running

    /// Runs until `stop()`; then tells every registration still open (`loopStopped`).
    ///
    /// One pass: wait, dispatch what epoll reported, run the queued reads, fire the timers, then the
    /// end-of-pass hooks. The after-each-event hooks run after each descriptor's callbacks, each
    /// queued read and the batch of timers; the end-of-pass hooks run last, so that whatever the
    /// pass produced is seen by them at once, and on the pass that `stop()` ends too.
    public func run() {
        while running {
            var handled = epoll.wait(timeoutNanoseconds: waitTimeout())
            let started = MonotonicClock.nanoseconds()
            for i in 0..<handled {
                dispatch(epoll.readiness(at: i))
                eventHandled()
            }
            handled += readAgain()
            handled += fireTimers()
            eventHandled()
            for hook in endOfPass { hook() }
            if handled > 0 { handle.lag.observe(nanoseconds: MonotonicClock.nanoseconds() - started) }
            if case .manual(let clock) = handle.clock {
                clockMoved = clock.step(settled: isSettled(), nextDeadline: timers.nextDeadline())
            }
        }
        for case let registrant? in registrants { registrant.loopStopped() }
    }

    /// Runs `body` at the end of every pass from now on: after the pass's events, queued reads and
    /// timers, before the loop waits again (Redis's `beforeSleep`). For work worth doing once per
    /// pass rather than once per event: the server writes each connection's output there, one
    /// write for everything the pass produced. A hook that queues a read (`readAgain`) or a
    /// callback due now keeps the next wait from sleeping.
    public func atEndOfPass(_ body: @escaping () -> Void) {
        endOfPass.append(body)
    }

    /// Runs `body` each time the loop is done with one event: a descriptor's callbacks, one queued
    /// read, or the pass's batch of timers. uWebSockets uncorks a socket when its handler returns;
    /// the server writes what the event produced here, so that a reply never waits for the rest
    /// of a busy pass (docs/benchmarks.md, "Corking": flushed only at the end of the pass, the
    /// server-added latency of 10,000 sessions went from 23 µs to 512 µs on average).
    public func afterEachEvent(_ body: @escaping () -> Void) {
        afterEvent.append(body)
    }

    @inline(__always) private func eventHandled() {
        for hook in afterEvent { hook() }
    }

    /// Ends `run()` after the current iteration.
    public func stop() { running = false }

    private func dispatch(_ readiness: Readiness) {
        if readiness.token == Self.wakeToken { return wokenUp() }
        let slot = Int(UInt32(truncatingIfNeeded: readiness.token))
        let generation = UInt32(truncatingIfNeeded: readiness.token >> 32)
        guard slot < registrants.count, generations[slot] == generation, let registrant = registrants[slot] else { return }
        if readiness.writable { registrant.writable() }
        // Writing may have ended the registration.
        guard readiness.readable, generations[slot] == generation else { return }
        registrant.readable(hungUp: readiness.hungUp)
    }

    private func wokenUp() {
        Sys.drain(eventfd: handle.wakeFD)
        deliverOffloads()
        if handle.isStopRequested && !stopHandled {
            stopHandled = true
            if let onStopRequested { onStopRequested() } else { stop() }
        }
    }

    // MARK: Registrations

    /// Watches `fd` for `interest`; `make` builds the registrant that the loop will call, given its
    /// registration (which it keeps, to end it with `deregister` before closing the descriptor).
    /// On failure nothing stays registered and `make`'s registrant is dropped.
    public func register<R: LoopRegistrant>(_ fd: Int32, _ interest: Interest, _ make: (Registration) -> R) throws(SystemError) -> R {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = Int32(registrants.count)
            registrants.append(nil)
            generations.append(freshGeneration)
            timers.grow(toSlots: registrants.count)
        }
        let registration = Registration(slot: slot, generation: generations[Int(slot)])
        do {
            try epoll.add(fd, interest, token: registration.token)
        } catch {
            freeSlots.append(slot)
            throw error
        }
        let registrant = make(registration)
        registrants[Int(slot)] = registrant
        return registrant
    }

    /// Changes what `fd` is watched for (EPOLLOUT armed only while output is pending).
    public func modify(_ registration: Registration, fd: Int32, _ interest: Interest) {
        // Fails only for a descriptor that is not registered: a closed one, which has nothing to wait for.
        try? epoll.modify(fd, interest, token: registration.token)
    }

    /// Stops watching: the slot is free for reuse, its deadline cleared; late events for it are
    /// dropped. Call before closing the descriptor (closing also removes it from epoll).
    public func deregister(_ registration: Registration) {
        guard isCurrent(registration) else { return }
        let slot = Int(registration.slot)
        timers.clearDeadline(registration.slot)
        registrants[slot]?.queuedToReadAgain = false
        registrants[slot] = nil
        generations[slot] &+= 1
        freeSlots.append(registration.slot)
    }

    /// Gives back the slab's slots past the highest one in use, once at least 1,024 of them are free
    /// there (a wave of connections has closed): about 30 bytes a slot across the slab's and the
    /// timer wheel's arrays, which otherwise keep the capacity of the wave's peak (1 MB after
    /// 15,000 connections, docs/benchmarks.md, "Memory back after a wave"). Returns the slots given back.
    @discardableResult
    public func compactSlab() -> Int {
        let keep = (registrants.lastIndex { $0 != nil } ?? -1) + 1
        guard registrants.count - keep >= 1_024 else { return 0 }
        let released = registrants.count - keep
        // Every generation handed out for these slots is below their current one.
        if let top = generations[keep...].max() { freshGeneration = max(freshGeneration, top) }
        registrants = Array(registrants[..<keep])
        generations = Array(generations[..<keep])
        freeSlots = freeSlots.filter { Int($0) < keep }
        ready = ready.filter { Int($0.slot) < keep }
        timers.shrink(toSlots: keep)
        return released
    }

    /// Every open registration, for an owner that must reach all of its own (a server's drain).
    /// A snapshot: `body` may end registrations as it goes.
    public func forEachRegistrant(_ body: (LoopRegistrant) -> Void) {
        for case let registrant? in registrants { body(registrant) }
    }

    /// Stops watching `fd` for now, keeping the registration (a listener pausing at its
    /// descriptor limit); `resume` watches it again.
    public func pause(_ fd: Int32) { epoll.remove(fd) }

    public func resume(_ registration: Registration, fd: Int32, _ interest: Interest) {
        try? epoll.add(fd, interest, token: registration.token)
    }

    /// Calls `readable(hungUp: false)` on the next pass without waiting for an edge: a read budget
    /// was spent, or reading resumed after a pause, and edge-triggered epoll would not say so again.
    public func readAgain(_ registration: Registration) {
        guard isCurrent(registration), let registrant = registrants[Int(registration.slot)], !registrant.queuedToReadAgain else { return }
        registrant.queuedToReadAgain = true
        ready.append(registration)
    }

    private func readAgain() -> Int {
        guard !ready.isEmpty else { return 0 }
        // Two arrays swapped, not one copied: reads may queue registrations again meanwhile, and
        // neither array's storage is ever shared, so neither reallocates.
        swap(&ready, &readyBatch)
        var count = 0
        for registration in readyBatch {
            guard isCurrent(registration), let registrant = registrants[Int(registration.slot)] else { continue }
            registrant.queuedToReadAgain = false
            registrant.readable(hungUp: false)
            eventHandled()
            count += 1
        }
        readyBatch.removeAll(keepingCapacity: true)
        return count
    }

    // MARK: Time

    /// The loop's coarse clock, in ticks of `LoopTimers.tickMilliseconds` since it started.
    public var now: UInt32 { timers.now }

    /// Ticks covering `seconds`, at least one.
    public func ticks(seconds: Double) -> UInt32 { LoopTimers.ticks(seconds: seconds) }

    /// Sets (or moves) the registration's one deadline to `ticks` from now; `deadlinePassed` is
    /// called then. O(1) and allocation-free: every connection's handshake, idle and close time-outs.
    public func setDeadline(_ registration: Registration, afterTicks ticks: UInt32) {
        guard isCurrent(registration) else { return }
        timers.setDeadline(registration.slot, afterTicks: ticks)
    }

    public func clearDeadline(_ registration: Registration) {
        guard isCurrent(registration) else { return }
        timers.clearDeadline(registration.slot)
    }

    /// The registration is the one its slot holds now (not one ended, whose slot may be reused or given back).
    private func isCurrent(_ registration: Registration) -> Bool {
        Int(registration.slot) < generations.count && generations[Int(registration.slot)] == registration.generation
    }

    /// Runs `body` on this loop after `seconds` (0: on the next pass). Cancel the returned task to
    /// keep it from running. For precise ticks (20 ms of reply audio) and one-off time-outs.
    @discardableResult
    public func schedule(after seconds: Double, _ body: @escaping () -> Void) -> ScheduledTask {
        timers.schedule(at: nanoseconds() + MonotonicClock.nanoseconds(seconds), body)
    }

    /// Runs `body` on this loop once its clock (`nanoseconds()`) reaches `deadline`: for a value
    /// machine that says when it next wants the time.
    @discardableResult
    public func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> ScheduledTask {
        timers.schedule(at: deadline, body)
    }

    /// The loop's clock now, in nanoseconds: what everything on the loop that decides by time
    /// reads (`LoopClock`), so that a test can drive it.
    @inline(__always) public func nanoseconds() -> UInt64 { handle.clock.nanoseconds() }

    /// Nothing to do at the present time: no read queued, no offloaded work out, nothing posted
    /// and no callback due. What a manual clock waits for before it moves.
    private func isSettled() -> Bool {
        ready.isEmpty && offloads.isEmpty && handle.inbox.isEmpty && (timers.nextDeadline().map { $0 > nanoseconds() } ?? true)
            && !clockHolds.contains { $0() }
    }

    /// A manual clock does not move while `busy()` (work this loop waits on that is neither an
    /// offload nor a timer: a request to another process, answered on a socket). Evaluated only
    /// on a manual clock.
    public func holdClock(while busy: @escaping () -> Bool) {
        clockHolds.append(busy)
    }

    /// How long epoll may sleep: until the next tick or the next callback, whichever is first;
    /// not at all while reads are queued or a manual clock has just moved.
    private func waitTimeout() -> UInt64 {
        ready.isEmpty && !clockMoved ? timers.nanosecondsUntilNext(now: nanoseconds()) : 0
    }

    private func fireTimers() -> Int {
        let bodies = timers.advance(now: nanoseconds(), expired: &expired)
        var fired = bodies.count
        for slot in expired {
            guard let registrant = registrants[Int(slot)] else { continue }
            registrant.deadlinePassed()
            fired += 1
        }
        expired.removeAll(keepingCapacity: true)
        for body in bodies { body() }
        return fired
    }

    // MARK: Offloaded work

    func nextOffloadID() -> UInt64 {
        lastOffloadID &+= 1
        return lastOffloadID
    }

    func registerOffload(_ id: UInt64, _ completion: @escaping (any Sendable) -> Void) {
        offloads[id] = completion
    }

    func forgetOffload(_ id: UInt64) {
        offloads[id] = nil
    }

    /// Runs the completions whose results have come back; a cancelled one's result is dropped.
    private func deliverOffloads() {
        for delivery in handle.inbox.take() {
            if delivery.ticket == LoopInbox.jobTicket, let job = delivery.result as? LoopInbox.Job {
                job.body()
                continue
            }
            offloads.removeValue(forKey: delivery.ticket)?(delivery.result)
        }
    }

    // MARK: Loop-local objects

    /// The one `T` of this loop, made by `make` on first use: per-loop state of an upper layer
    /// (the HTTP client and its pool) that the loop holds without knowing what it is.
    public func local<T: AnyObject>(_ make: () -> T) -> T {
        let key = ObjectIdentifier(T.self)
        if let existing = locals[key] { return unsafeDowncast(existing, to: T.self) }
        let made = make()
        locals[key] = made
        return made
    }
}
