import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The survive test's sessions on one connection pool: the phases of the run (connect, turns,
/// settle, check), reconnecting every drop with resume, and the turns each session takes.
final class SurviveRun: ConnectionEvents {
    struct Settings {
        var count: Int
        var rate: Double
        var connectTimeout: Double
        var turnInterval: Double
        var duration: Double
        var settleSeconds: Double
        /// Every third text turn asks for the weather, answered with a tool call.
        var tools = false
        /// The first this many sessions speak their turns.
        var spoken = 0
        /// Every this many spoken turns the reply is cut (0: never).
        var cutEvery = 0
        /// The last `tenantSessions` sessions present `tenantKey`, whose tenant the server caps
        /// at `tenantLimit` sessions.
        var tenantKey: String?
        var tenantSessions = 0
        var tenantLimit = 0
    }

    struct Summary {
        var json: JSON
        var table: String
        var passed: Bool
    }

    /// A text turn is answered in well under a second; a spoken one is transcribed, then spoken
    /// at real-time pace (a reply of twenty words is about seven seconds of audio).
    static let textTurnSeconds: UInt64 = 20
    static let spokenTurnSeconds: UInt64 = 45
    /// A refused tenant session opens afresh this often.
    static let tenantRetrySeconds: UInt64 = 5

    let pool: ConnectionPool
    let target: LoadTarget
    let basePath: String
    let settings: Settings
    let count: Int
    let interval: UInt64
    let speech: SurviveSpeech?
    var sessions: [SurviveSession]
    let offsets: [UInt64]
    var scheduleStart = UInt64.max
    var scheduleEnd = UInt64.max
    var nextSlot = 0
    var round: UInt64 = 0
    var ackTick: UInt64 = 0
    var tenantSecond = 0
    var checking = false
    var counts = SurviveCounts()

    init(target: LoadTarget, settings: Settings, speech: SurviveSpeech?) throws(ClientSocket.Failure) {
        self.target = target
        self.settings = settings
        self.speech = speech
        count = settings.count
        basePath = String(target.path.prefix { $0 != "?" })
        interval = MonotonicClock.nanoseconds(settings.turnInterval)
        // The pool's own deadline covers the first connects only; reconnects are timed here.
        pool = try ConnectionPool(.init(target: target, count: count, firstIndex: 0, sources: 16, rate: settings.rate,
                                        connectTimeout: settings.connectTimeout))
        sessions = Array(repeating: SurviveSession(), count: count)
        var random = SystemRandomNumberGenerator()
        let slice = settings.turnInterval / Double(count)
        offsets = (0..<count).map { MonotonicClock.nanoseconds((Double($0) + Double.random(in: 0..<1, using: &random)) * slice) }
        pool.events = self
        if let key = settings.tenantKey {
            let first = count - settings.tenantSessions
            pool.offeredKey = { slot in slot >= first ? key : nil }
        }
    }

    func speaks(_ slot: Int) -> Bool { slot < settings.spoken }
    func inTenant(_ slot: Int) -> Bool { settings.tenantKey != nil && slot >= count - settings.tenantSessions }

    /// Connect, turns, settle, check, close: every phase bounded.
    func drive() {
        let progress = Progress()
        let start = MonotonicClock.nanoseconds()
        let connectBound = start + MonotonicClock.nanoseconds(settings.connectTimeout + 5)
        while !connected && MonotonicClock.nanoseconds() < connectBound {
            step(wait: 10)
            progress.update("connecting  \(Format.grouped(pool.connected))/\(Format.grouped(count))  session.created \(Format.grouped(counts.created))")
        }
        progress.finish()
        counts.connectSeconds = MonotonicClock.seconds(since: start)
        print("connected: \(Format.grouped(counts.created)) sessions in \(Format.fixed(counts.connectSeconds, 1)) s (failed: \(Format.reasons(pool.failed)))")
        Console.flush()

        scheduleStart = MonotonicClock.nanoseconds() + 100_000_000
        scheduleEnd = scheduleStart + MonotonicClock.nanoseconds(settings.duration)
        var lastPrint: UInt64 = 0
        while MonotonicClock.nanoseconds() < scheduleEnd {
            step(wait: 5)
            let now = MonotonicClock.nanoseconds()
            if now - lastPrint > 5_000_000_000 {
                lastPrint = now
                print(statusLine(now))
                Console.flush()
            }
        }
        let settleBound = scheduleEnd + MonotonicClock.nanoseconds(settings.settleSeconds)
        while MonotonicClock.nanoseconds() < settleBound && sessions.contains(where: unsettled) {
            step(wait: 10)
        }
        print("settled: " + statusLine(MonotonicClock.nanoseconds()))
        Console.flush()

        // Ask for every item the client was told was done, a slice of the sessions at a time.
        checking = true
        let checkBound = MonotonicClock.nanoseconds() + 60_000_000_000
        var next = 0
        while MonotonicClock.nanoseconds() < checkBound {
            while next < count && counts.itemsChecked - counts.itemsRetrieved - counts.itemsLost - counts.itemsUnreachable - counts.itemsOnEndedSessions < 20_000 {
                check(next)
                next += 1
                if next % 100 == 0 { break }
            }
            step(wait: 5)
            if next == count && !sessions.contains(where: { $0.checksLeft > 0 }) { break }
        }
        for i in 0..<count where sessions[i].checksLeft > 0 { counts.itemsUnreachable += sessions[i].checksLeft }
        counts.openAtEnd = sessions.filter { $0.state == .ready }.count
        pool.closeAll()
    }

    /// Every session has opened (and may be resuming already), failed, or (the limited tenant's)
    /// been refused and tries again.
    private var connected: Bool {
        pool.started == count && sessions.indices.allSatisfy { slot in
            switch sessions[slot].state {
            case .ready, .dead, .tenantWait: true
            case .connecting, .opening, .backoff: sessions[slot].everOpened || (inTenant(slot) && sessions[slot].attempts > 0)
            }
        }
    }

    /// Still in flight after the turns: a reconnect, a turn, a replay, a cut whose truncation or
    /// the retrieve after it has not come back. A tenant session still refused is not waited for.
    private func unsettled(_ session: SurviveSession) -> Bool {
        switch session.state {
        case .dead, .tenantWait: return false
        case .connecting, .opening, .backoff: return session.token != nil
        case .ready:
            return session.turnSentAt != 0 || session.replayLeft > 0 || !session.configured
                || session.cuts.contains(where: \.pending)
        }
    }

    func statusLine(_ now: UInt64) -> String {
        let t = Double(Int64(bitPattern: now &- scheduleStart)) / 1e9
        let down = sessions.filter { $0.state == .backoff || $0.state == .connecting || $0.state == .opening }.count
        var line = "  \(Format.fixed(t, 0)) s  ready \(Format.grouped(sessions.filter { $0.state == .ready }.count))  down \(Format.grouped(down))  dead \(Format.grouped(sessions.filter { $0.state == .dead }.count))  turns \(Format.grouped(counts.turnsSent))/\(Format.grouped(counts.turnsCompleted)) done  resumes \(Format.grouped(counts.resumes))  drops \(Format.grouped(counts.drops.values.reduce(0, +)))"
        if settings.spoken > 0 { line += "  spoken \(counts.spokenTurnsSent)/\(counts.spokenTurnsCompleted) cuts \(counts.cutsSent)" }
        if settings.tools { line += "  tool calls \(counts.toolCallsAnswered)" }
        if settings.tenantKey != nil { line += "  tenant open \(tenantOpen) (max \(counts.tenantTimeline.maximum))" }
        return line
    }

    var tenantOpen: Int { (count - settings.tenantSessions..<count).filter { sessions[$0].state == .ready }.count }

    func check(_ slot: Int) {
        guard sessions[slot].state == .ready, let connection = sessions[slot].connection else {
            // A session that never had a resume token (opened while the store was away: told
            // `resume_unavailable`, docs/protocol.md) ends at its next drop, its conversation with
            // it, as documented: its items are not lost but ended. One that had a token and cannot
            // be reached is a problem.
            if sessions[slot].state == .dead && sessions[slot].token == nil {
                counts.itemsOnEndedSessions += sessions[slot].done.count
            } else {
                counts.itemsUnreachable += sessions[slot].done.count
            }
            counts.itemsChecked += sessions[slot].done.count
            return
        }
        for (i, id) in sessions[slot].done.enumerated() {
            send(#"{"type":"conversation.item.retrieve","event_id":"chk_\#(slot)_\#(i)","item_id":"\#(id)"}"#, on: connection)
        }
        sessions[slot].checksLeft = sessions[slot].done.count
        counts.itemsChecked += sessions[slot].done.count
    }

    func step(wait: Int32) {
        pool.step(timeoutMilliseconds: wait)
        let now = MonotonicClock.nanoseconds()
        retry(now)
        if scheduleStart != .max && !checking { sendDue(now) }
        if !checking { turnTimeouts(now) }
        // A tenth of the sessions every 100 ms: each acks once a second.
        let tick = now / 100_000_000
        if tick != ackTick {
            ackTick = tick
            var slot = Int(tick % 10)
            while slot < count {
                if sessions[slot].state == .ready, sessions[slot].replayLeft == 0, sessions[slot].lastSeq > sessions[slot].ackedSeq,
                   let connection = sessions[slot].connection {
                    sessions[slot].ackedSeq = sessions[slot].lastSeq
                    send(#"{"type":"session.ack","seq":\#(sessions[slot].lastSeq)}"#, on: connection)
                }
                slot += 10
            }
        }
        if settings.tenantKey != nil, !checking {
            let second = WallClock.seconds()
            if second != tenantSecond {
                tenantSecond = second
                counts.tenantTimeline.sample(at: second, open: tenantOpen)
            }
        }
    }

    // MARK: Reconnecting

    func retry(_ now: UInt64) {
        for slot in 0..<count {
            switch sessions[slot].state {
            case .backoff where sessions[slot].retryAt <= now:
                // A session that never opened opens anew; one that did resumes with its token.
                guard let token = sessions[slot].token else { reconnect(slot, path: target.path, now); continue }
                reconnect(slot, path: "\(basePath)?resume_token=\(token)&last_seq=\(sessions[slot].lastSeq)", now)
            case .tenantWait where sessions[slot].retryAt <= now:
                // Through the turns only: after them, a session that never opened has nothing to check.
                guard scheduleEnd == .max || now < scheduleEnd else { continue }
                reconnect(slot, path: target.path, now)
            case .connecting, .opening:
                // An attempt that hangs is given up after 10 s and made again. Longer than the
                // chaos proxy's stalls (2-6 s): a resume the server took but whose answer a stall
                // held has rotated the token, so a client that gives up on it first cannot resume
                // again (make chaos lost 6 sessions so with 5 s, 2026-11-28: resume_token_invalid).
                if sessions[slot].attemptStartedAt != 0, now - sessions[slot].attemptStartedAt > 10_000_000_000, let connection = sessions[slot].connection {
                    pool.abandon(connection, "attempt timed out")
                }
            default:
                break
            }
        }
    }

    private func reconnect(_ slot: Int, path: String, _ now: UInt64) {
        sessions[slot].attemptStartedAt = now
        switch pool.reconnect(slot: slot, path: path) {
        case .success(let connection):
            sessions[slot].connection = connection
            sessions[slot].state = .connecting
        case .failure(let failure):
            counts.reconnectFailures[failure.description, default: 0] += 1
            if sessions[slot].token == nil { scheduleTenantRetry(slot, now) } else { scheduleRetry(slot, now) }
        }
    }

    /// How often a session whose first open the network dropped is opened again (its backoff
    /// grows to 1 s: about 5 s in all).
    static let openAttempts = 8

    func scheduleRetry(_ slot: Int, _ now: UInt64) {
        let backoff = min(UInt64(50_000_000) << UInt64(min(sessions[slot].attempts, 5)), 1_000_000_000)
        sessions[slot].attempts += 1
        sessions[slot].retryAt = now + backoff
        sessions[slot].state = .backoff
        sessions[slot].connection = nil
    }

    func scheduleTenantRetry(_ slot: Int, _ now: UInt64) {
        sessions[slot].attempts += 1
        sessions[slot].retryAt = now + Self.tenantRetrySeconds * 1_000_000_000
        sessions[slot].state = .tenantWait
        sessions[slot].connection = nil
    }

    func send(_ text: String, on connection: ClientConnection) {
        var text = text
        text.withUTF8 { pool.sendFrame(ClientFrame.text, UnsafeRawBufferPointer($0), on: connection) }
    }
}
