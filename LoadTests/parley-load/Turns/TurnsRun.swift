import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The `turns` test in one process: its share of the sessions connect and wait for
/// `session.created` (with tools, each then declares them in a `session.update` and waits for its
/// `session.updated`); once the parent names the start, each sends a text turn every interval, at
/// its own phase within the interval, and times the reply from the moment response.create leaves.
///
/// The load is open-loop: turns are due on a fixed schedule whatever the server does. A turn that
/// comes due while the session's previous reply is still running is skipped and counted, not sent
/// (the server would refuse it), so a server that falls behind shows as skips, not as a load that
/// quietly slowed down to suit it.
final class TurnsRun: ConnectionEvents {
    struct Settings {
        let target: LoadTarget
        let count: Int
        /// Index of this run's first session across processes, for source addresses.
        let firstIndex: Int
        let sources: Int
        let rate: Double
        let connectTimeout: Double
        let turnInterval: Double
        let warmup: Double
        let duration: Double
        /// Function tools each session declares before its first turn (TurnsTools); 0 for none,
        /// and then no session.update is sent.
        var tools = 0
    }

    enum Phase: String, CaseIterable, Comparable {
        /// Connecting, and waiting for every session's session.created.
        case connecting
        /// Every session is open (or failed); waiting for the parent to name the start.
        case ready
        case warmup
        case measuring
        /// The measured period is over; no more turns are sent, and the replies in flight finish.
        case draining
        case drained

        static func < (a: Phase, b: Phase) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// A measured turn still unanswered this long after the measured period ends is counted as
    /// unanswered.
    static let drainSeconds = 15.0

    private struct SessionState {
        var connection: ClientConnection?
        /// session.created has arrived.
        var created = false
        /// When the session.update declaring the tools was sent; 0 when none is awaiting its
        /// session.updated.
        var updateSentAt: UInt64 = 0
        /// The session.update was answered by an error: the session never becomes ready.
        var updateRefused = false
        /// session.created has arrived, and with tools, session.updated too: turns may start.
        var ready = false
        var turns = 0
        /// When response.create was sent; 0 when no turn is in flight.
        var sentAt: UInt64 = 0
        /// The turn in flight was due in the measured period.
        var measured = false
        /// response.created arrived for the turn in flight: an error now is not a refusal.
        var responseStarted = false
        var sawDelta = false
    }

    let settings: Settings
    let pool: ConnectionPool
    private var sessions: [SessionState]
    /// Each session's phase within the interval, in nanoseconds, ascending by slot.
    private let offsets: [UInt64]
    private let interval: UInt64
    private let connectDeadline: UInt64
    private let responseCreate = Array(#"{"type":"response.create"}"#.utf8)
    /// The session.update every session sends after session.created; empty without tools.
    private let sessionUpdate: [UInt8]

    private(set) var phase = Phase.connecting
    private var scheduleStart = UInt64.max
    private var measureStart = UInt64.max
    private var measureEnd = UInt64.max
    /// The next turn due: session `nextSlot` in round `round`.
    private var nextSlot = 0
    private var round: UInt64 = 0
    private var cpuAtMeasureStart = CPUTime.zero

    /// Open sessions that have had session.created (with tools: and session.updated).
    private(set) var ready = 0
    /// Open sessions whose session.update was answered by an error.
    private(set) var updateRefused = 0
    /// From sending session.update to its session.updated.
    private(set) var updateLatency = LatencyRecorder()
    /// Over the whole run, warm-up included, for the progress line.
    private(set) var turnsSent = 0
    private(set) var responsesDone = 0
    private(set) var inFlight = 0
    private var measuredInFlight = 0
    private(set) var result = TurnsResult()

    init(_ settings: Settings) throws(ClientSocket.Failure) {
        self.settings = settings
        pool = try ConnectionPool(.init(
            target: settings.target, count: settings.count, firstIndex: settings.firstIndex,
            sources: settings.sources, rate: settings.rate, connectTimeout: settings.connectTimeout))
        sessions = Array(repeating: SessionState(), count: settings.count)
        sessionUpdate = settings.tools > 0 ? Array(TurnsTools.sessionUpdate(settings.tools).utf8) : []
        interval = MonotonicClock.nanoseconds(settings.turnInterval)
        // One session in each equal slice of the interval, at a random point in its slice: turns
        // arrive evenly, and no two processes' schedules line up.
        var random = SystemRandomNumberGenerator()
        let slice = settings.turnInterval / Double(settings.count)
        offsets = (0..<settings.count).map { i in
            MonotonicClock.nanoseconds((Double(i) + Double.random(in: 0..<1, using: &random)) * slice)
        }
        connectDeadline = pool.startedAt + MonotonicClock.nanoseconds(settings.connectTimeout)
        pool.events = self
    }

    /// The parent's word: the schedule starts at `start` on the monotonic clock, which all
    /// processes on the machine share; warm-up and measured period follow from it.
    func begin(at start: UInt64) {
        guard scheduleStart == .max else { return }
        scheduleStart = start
        measureStart = start + MonotonicClock.nanoseconds(settings.warmup)
        measureEnd = measureStart + MonotonicClock.nanoseconds(settings.duration)
    }

    /// Handles what is ready, sends the turns that are due, and moves through the phases.
    func step() {
        var wait: Int32 = 100
        if scheduleStart != .max && phase < .draining {
            // Wake for the next turn due (the first, before the start); epoll counts in milliseconds.
            let due = scheduleStart + offsets[nextSlot] + round * interval
            let now = MonotonicClock.nanoseconds()
            wait = due <= now ? 0 : Int32(min(100, (due - now + 999_999) / 1_000_000))
        }
        pool.step(timeoutMilliseconds: wait)
        advance(MonotonicClock.nanoseconds())
    }

    private func advance(_ now: UInt64) {
        if phase == .connecting && pool.settled && (ready + updateRefused == pool.open || now >= connectDeadline) { phase = .ready }
        if phase == .ready && now >= scheduleStart { phase = .warmup }
        if phase == .warmup && now >= measureStart {
            phase = .measuring
            cpuAtMeasureStart = .ofSelf()
        }
        if phase == .warmup || phase == .measuring { sendDue(now) }
        if phase == .measuring && now >= measureEnd {
            phase = .draining
            result.cpuMeasured = .ofSelf() - cpuAtMeasureStart
            result.measuredSeconds = Double(measureEnd - measureStart) / 1e9
        }
        if phase == .draining && (measuredInFlight == 0 || now >= measureEnd + MonotonicClock.nanoseconds(Self.drainSeconds)) {
            phase = .drained
            result.unanswered = measuredInFlight
        }
    }

    // MARK: Turns

    /// Sends every turn due by `now` and before the end of the measured period. Offsets ascend and
    /// are under one interval, so the turns come due in slot order, round after round.
    private func sendDue(_ now: UInt64) {
        while true {
            let due = scheduleStart + offsets[nextSlot] + round * interval
            guard due <= now, due < measureEnd else { return }
            send(slot: nextSlot, due: due, now: now)
            nextSlot += 1
            if nextSlot == offsets.count {
                nextSlot = 0
                round += 1
            }
        }
    }

    private func send(slot: Int, due: UInt64, now: UInt64) {
        let measured = due >= measureStart
        if measured { result.maxSendLag = max(result.maxSendLag, now - due) }
        guard sessions[slot].ready, let connection = sessions[slot].connection else {
            if measured { result.skippedClosed += 1 }
            return
        }
        guard sessions[slot].sentAt == 0 else {
            if measured { result.skippedBusy += 1 }
            return
        }
        sessions[slot].turns += 1
        let item = #"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(TurnsTools.turnText(sessions[slot].turns))"}]}}"#
        var bytes = Array(item.utf8)
        bytes.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
        bytes = responseCreate
        let sentAt = MonotonicClock.nanoseconds()
        bytes.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
        // A failed write has closed the session and counted it lost.
        guard connection.isOpen else {
            if measured { result.skippedClosed += 1 }
            return
        }
        sessions[slot].sentAt = sentAt
        sessions[slot].measured = measured
        sessions[slot].responseStarted = false
        sessions[slot].sawDelta = false
        turnsSent += 1
        inFlight += 1
        if measured {
            result.turns += 1
            measuredInFlight += 1
        }
    }

    /// The turn in flight on `slot` is over, answered or not.
    private func endTurn(_ slot: Int) {
        inFlight -= 1
        if sessions[slot].measured { measuredInFlight -= 1 }
        sessions[slot].sentAt = 0
        sessions[slot].measured = false
    }

    // MARK: Server events

    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        sessions[connection.slot].connection = connection
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text else { return }
        let now = MonotonicClock.nanoseconds()
        let slot = connection.slot
        switch RealtimeEventKind.of(payload) {
        case .sessionCreated:
            guard !sessions[slot].created else { return }
            sessions[slot].created = true
            if sessionUpdate.isEmpty {
                sessions[slot].ready = true
                ready += 1
            } else {
                // Set first: a failed write closes the session, and `lost` starts its state afresh.
                sessions[slot].updateSentAt = MonotonicClock.nanoseconds()
                sessionUpdate.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
            }
        case .sessionUpdated:
            // Only the answer to our own session.update makes the session ready.
            guard sessions[slot].updateSentAt != 0 else { return }
            updateLatency.record(now - sessions[slot].updateSentAt)
            sessions[slot].updateSentAt = 0
            sessions[slot].ready = true
            ready += 1
        case .responseCreated:
            sessions[slot].responseStarted = true
        case .outputTextDelta:
            guard sessions[slot].sentAt != 0, !sessions[slot].sawDelta else { return }
            sessions[slot].sawDelta = true
            if sessions[slot].measured { result.firstDelta.record(now - sessions[slot].sentAt) }
        case .responseDone:
            responseDone(slot, payload, at: now)
        case .error:
            let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self))
            result.errors[event?["error"]?["code"]?.string ?? "(no code)", default: 0] += 1
            // Refused tools: nothing else of ours is in flight before the session is ready.
            if sessions[slot].updateSentAt != 0 {
                sessions[slot].updateSentAt = 0
                sessions[slot].updateRefused = true
                updateRefused += 1
                return
            }
            // Refused before any response began: no response.done will come for this turn.
            if sessions[slot].sentAt != 0 && !sessions[slot].responseStarted {
                if sessions[slot].measured { result.refused += 1 }
                endTurn(slot)
            }
        case .other, .speechStarted, .speechStopped:
            break
        }
    }

    private func responseDone(_ slot: Int, _ payload: UnsafeRawBufferPointer, at now: UInt64) {
        guard sessions[slot].sentAt != 0 else {
            result.strays += 1
            return
        }
        responsesDone += 1
        if sessions[slot].measured {
            let response = (try? JSON(parsing: String(decoding: payload, as: UTF8.self)))?["response"]
            let status = response?["status"]?.string ?? "(no status)"
            result.done.record(now - sessions[slot].sentAt)
            result.statuses[status, default: 0] += 1
            if status != "completed" {
                let details = response?["status_details"]
                let why = details?["error"]?["code"]?.string ?? details?["reason"]?.string ?? "no reason given"
                result.notCompleted["\(status): \(why)", default: 0] += 1
            }
        }
        endTurn(slot)
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        let slot = connection.slot
        if sessions[slot].ready { ready -= 1 }
        if sessions[slot].updateRefused { updateRefused -= 1 }
        if sessions[slot].sentAt != 0 {
            if sessions[slot].measured { result.lostInFlight += 1 }
            endTurn(slot)
        }
        sessions[slot] = SessionState()
    }
}
