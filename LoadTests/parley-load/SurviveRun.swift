import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The survive test's sessions on one connection pool.
final class SurviveRun: ConnectionEvents {
    struct Summary {
        var json: JSON
        var table: String
        var passed: Bool
    }

    let pool: ConnectionPool
    let target: LoadTarget
    let basePath: String
    let count: Int
    let interval: UInt64
    let duration: Double
    let connectTimeout: Double
    let settleSeconds: Double
    var sessions: [SurviveSession]
    let offsets: [UInt64]
    var scheduleStart = UInt64.max
    var scheduleEnd = UInt64.max
    var nextSlot = 0
    var round: UInt64 = 0
    var ackTick: UInt64 = 0
    var checking = false
    var counts = SurviveCounts()

    init(target: LoadTarget, count: Int, rate: Double, connectTimeout: Double, turnInterval: Double, duration: Double, settleSeconds: Double) throws(ClientSocket.Failure) {
        self.target = target
        self.count = count
        self.duration = duration
        self.connectTimeout = connectTimeout
        self.settleSeconds = settleSeconds
        basePath = String(target.path.prefix { $0 != "?" })
        interval = MonotonicClock.nanoseconds(turnInterval)
        // The pool's own deadline covers the first connects only; reconnects are timed here.
        pool = try ConnectionPool(.init(target: target, count: count, firstIndex: 0, sources: 16, rate: rate, connectTimeout: connectTimeout))
        sessions = Array(repeating: SurviveSession(), count: count)
        var random = SystemRandomNumberGenerator()
        let slice = turnInterval / Double(count)
        offsets = (0..<count).map { MonotonicClock.nanoseconds((Double($0) + Double.random(in: 0..<1, using: &random)) * slice) }
        pool.events = self
    }

    /// Connect, turns, settle, check, close: every phase bounded.
    func drive() {
        let progress = Progress()
        let start = MonotonicClock.nanoseconds()
        let connectBound = start + MonotonicClock.nanoseconds(connectTimeout + 5)
        while !(pool.settled && counts.created + sessions.filter({ $0.state == .dead }).count >= count) && MonotonicClock.nanoseconds() < connectBound {
            step(wait: 10)
            progress.update("connecting  \(Format.grouped(pool.connected))/\(Format.grouped(count))  session.created \(Format.grouped(counts.created))")
        }
        progress.finish()
        counts.connectSeconds = MonotonicClock.seconds(since: start)
        print("connected: \(Format.grouped(counts.created)) sessions in \(Format.fixed(counts.connectSeconds, 1)) s (failed: \(Format.reasons(pool.failed)))")
        Console.flush()

        scheduleStart = MonotonicClock.nanoseconds() + 100_000_000
        scheduleEnd = scheduleStart + MonotonicClock.nanoseconds(duration)
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
        let settleBound = scheduleEnd + MonotonicClock.nanoseconds(settleSeconds)
        while MonotonicClock.nanoseconds() < settleBound && sessions.contains(where: { ($0.state != .dead && $0.state != .ready) || $0.turnSentAt != 0 || $0.replayLeft > 0 }) {
            step(wait: 10)
        }
        print("settled: " + statusLine(MonotonicClock.nanoseconds()))
        Console.flush()

        // Ask for every item the client was told was done, a slice of the sessions at a time.
        checking = true
        let checkBound = MonotonicClock.nanoseconds() + 60_000_000_000
        var next = 0
        while MonotonicClock.nanoseconds() < checkBound {
            while next < count && counts.itemsChecked - counts.itemsRetrieved - counts.itemsLost - counts.itemsUnreachable < 20_000 {
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

    func statusLine(_ now: UInt64) -> String {
        let t = Double(Int64(bitPattern: now &- scheduleStart)) / 1e9
        let down = sessions.filter { $0.state == .backoff || $0.state == .connecting || $0.state == .opening }.count
        return "  \(Format.fixed(t, 0)) s  ready \(Format.grouped(sessions.filter { $0.state == .ready }.count))  down \(Format.grouped(down))  dead \(Format.grouped(sessions.filter { $0.state == .dead }.count))  turns \(Format.grouped(counts.turnsSent))/\(Format.grouped(counts.turnsCompleted)) done  resumes \(Format.grouped(counts.resumes))  drops \(Format.grouped(counts.drops.values.reduce(0, +)))"
    }

    func check(_ slot: Int) {
        guard sessions[slot].state == .ready, let connection = sessions[slot].connection else {
            counts.itemsUnreachable += sessions[slot].done.count
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
    }

    // MARK: Reconnecting

    func retry(_ now: UInt64) {
        for slot in 0..<count {
            switch sessions[slot].state {
            case .backoff where sessions[slot].retryAt <= now:
                guard let token = sessions[slot].token else { continue }
                sessions[slot].attemptStartedAt = now
                switch pool.reconnect(slot: slot, path: "\(basePath)?resume_token=\(token)&last_seq=\(sessions[slot].lastSeq)") {
                case .success(let connection):
                    sessions[slot].connection = connection
                    sessions[slot].state = .connecting
                case .failure(let failure):
                    counts.reconnectFailures[failure.description, default: 0] += 1
                    scheduleRetry(slot, now)
                }
            case .connecting, .opening:
                // An attempt that hangs is given up after 5 s and made again.
                if sessions[slot].attemptStartedAt != 0, now - sessions[slot].attemptStartedAt > 5_000_000_000, let connection = sessions[slot].connection {
                    pool.abandon(connection, "attempt timed out")
                }
            default:
                break
            }
        }
    }

    func scheduleRetry(_ slot: Int, _ now: UInt64) {
        let backoff = min(UInt64(50_000_000) << UInt64(min(sessions[slot].attempts, 5)), 1_000_000_000)
        sessions[slot].attempts += 1
        sessions[slot].retryAt = now + backoff
        sessions[slot].state = .backoff
        sessions[slot].connection = nil
    }

    // MARK: Turns

    func sendDue(_ now: UInt64) {
        while true {
            let due = scheduleStart + offsets[nextSlot] + round * interval
            guard due <= now, due < scheduleEnd else { return }
            if sessions[nextSlot].pendingTurn { counts.turnsSkipped += 1 }
            sessions[nextSlot].pendingTurn = true
            startTurnIfFree(nextSlot, now)
            nextSlot += 1
            if nextSlot == offsets.count {
                nextSlot = 0
                round += 1
            }
        }
    }

    func startTurnIfFree(_ slot: Int, _ now: UInt64) {
        guard sessions[slot].pendingTurn, sessions[slot].state == .ready, sessions[slot].replayLeft == 0,
              sessions[slot].turnSentAt == 0, let connection = sessions[slot].connection else { return }
        sessions[slot].pendingTurn = false
        sessions[slot].turns += 1
        sessions[slot].turnItemID = "u\(slot)t\(sessions[slot].turns)"
        sessions[slot].turnSentAt = now
        sessions[slot].turnUserSeen = false
        sessions[slot].turnResponseSeen = false
        sessions[slot].turnNudged = false
        sessions[slot].turnDeadline = now + 20_000_000_000
        counts.turnsSent += 1
        sendTurn(slot, on: connection)
    }

    func sendTurn(_ slot: Int, on connection: ClientConnection) {
        send(#"{"type":"conversation.item.create","item":{"id":"\#(sessions[slot].turnItemID)","type":"message","role":"user","content":[{"type":"input_text","text":"\#(TurnsTools.turnText(sessions[slot].turns))"}]}}"#, on: connection)
        send(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#, on: connection)
    }

    /// A turn unanswered 20 s after it was sent (or after the session last came back) gets its
    /// response.create once more; 20 s after that it is counted unanswered.
    func turnTimeouts(_ now: UInt64) {
        for slot in 0..<count where sessions[slot].turnSentAt != 0 && sessions[slot].turnDeadline <= now && sessions[slot].state == .ready {
            if !sessions[slot].turnNudged, !sessions[slot].turnResponseSeen, let connection = sessions[slot].connection {
                sessions[slot].turnNudged = true
                sessions[slot].turnDeadline = now + 20_000_000_000
                counts.responsesNudged += 1
                if sessions[slot].turnUserSeen {
                    send(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#, on: connection)
                } else {
                    sendTurn(slot, on: connection)
                }
            } else {
                counts.turnsUnanswered += 1
                sessions[slot].turnSentAt = 0
            }
        }
    }

    /// The replay after session.resumed is over: a turn the server never received is sent again.
    func replayFinished(_ slot: Int, _ now: UInt64) {
        guard sessions[slot].turnSentAt != 0, let connection = sessions[slot].connection else { return startTurnIfFree(slot, now) }
        sessions[slot].turnDeadline = now + 20_000_000_000
        if !sessions[slot].turnUserSeen {
            counts.turnsResent += 1
            sendTurn(slot, on: connection)
        }
    }

    func send(_ text: String, on connection: ClientConnection) {
        var text = text
        text.withUTF8 { pool.sendFrame(ClientFrame.text, UnsafeRawBufferPointer($0), on: connection) }
    }
}
