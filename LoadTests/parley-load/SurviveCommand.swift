import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load survive N`: N resumable Realtime sessions in conversation through one address (a
/// balancer in front of several nodes) while the nodes are restarted and killed under them; every
/// dropped session comes back with its resume token and last seq, and at the end every item the
/// client was told was done is asked for again.
struct SurviveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survive",
        abstract: "Hold N resumable sessions in conversation through node restarts; resume every drop; count completed items lost.",
        discussion: """
            Each session connects with ?resume=1, keeps the newest session.resume_token and the seq \
            of the last event, and acks it every second. Every --turn-interval seconds (at its own \
            phase) it sends a text turn (conversation.item.create with an id of its own, then \
            response.create with output_modalities ["text"]) and waits for response.done. On any \
            drop (close 1012, 1001, 1006, EOF, connect refused, HTTP 503) it reconnects after 50 ms, \
            100 ms, … up to 1 s with ?resume_token=…&last_seq=…, and on session.resumed goes on; \
            a turn the server never heard of is sent again. After --duration seconds of turns and \
            the replies in flight, every session asks conversation.item.retrieve for every item \
            it saw in conversation.item.done or response.done: an item_not_found is a completed \
            item lost. One process.
            """)

    @Argument(help: "Sessions to hold (one process).")
    var count = 3000

    @Option(help: "The Realtime endpoint (the balancer's front); loopback only. ?resume=1 is added if missing.")
    var url = "ws://127.0.0.1:8080/v1/realtime?resume=1"

    @Option(help: "Seconds between one session's turns.")
    var turnInterval = 10.0

    @Option(help: "Seconds of turns, from the moment every session is open.")
    var duration = 150.0

    @Option(help: "Seconds allowed for every session to open and send session.created.")
    var connectTimeout = 60.0

    @Option(help: "Seconds allowed after the turns for replies in flight and resumes to finish.")
    var settleSeconds = 40.0

    @Option(help: "Connections started per second at the start.")
    var rate = 1000.0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard (1...19_000).contains(count) else { throw ValidationError("N must be 1...19000 (one client process)") }
        guard turnInterval > 0, turnInterval <= 3600 else { throw ValidationError("--turn-interval must be in (0, 3600]") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard duration / turnInterval <= 30 else {
            throw ValidationError("at most 30 turns per session: the server keeps 64 messages of history, and older items leave it")
        }
        guard connectTimeout > 0, settleSeconds > 0, rate > 0 else { throw ValidationError("timeouts and rate must be positive") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let full = url.contains("resume=1") ? url : url + (url.contains("?") ? "&" : "?") + "resume=1"
        let target = try LoadTarget(full, caFile: nil)
        DescriptorLimit.raiseToHard()
        print("parley-load survive: \(Format.grouped(count)) resumable sessions to \(target), a text turn every \(Format.fixed(turnInterval, 1)) s each for \(Format.fixed(duration, 0)) s; reconnect with resume on every drop")
        Console.flush()
        let run = try SurviveRun(target: target, count: count, rate: rate, connectTimeout: connectTimeout,
                                 turnInterval: turnInterval, duration: duration, settleSeconds: settleSeconds)
        let cpuBefore = CPUTime.ofSelf()
        let startedAt = MonotonicClock.nanoseconds()
        run.drive()
        let summary = run.summary(cpu: CPUTime.ofSelf() - cpuBefore, seconds: MonotonicClock.seconds(since: startedAt))
        if let json { try TextFile.write(summary.json.pretty, to: json) }
        print(summary.table)
        if !summary.passed { throw ExitCode.failure }
    }
}

/// The survive test's sessions on one connection pool.
final class SurviveRun: ConnectionEvents {
    private enum State { case connecting, opening, ready, backoff, dead }

    private struct Session {
        var state = State.connecting
        var connection: ClientConnection?
        var attemptStartedAt: UInt64 = 0
        var token: String?
        var lastSeq = 0
        var ackedSeq = 0
        /// When the current outage began (the first drop); 0 when connected.
        var droppedAt: UInt64 = 0
        var attempts = 0
        var retryAt: UInt64 = 0
        /// Events of the replay still to come after session.resumed.
        var replayLeft = 0
        /// A session.resumed came and no numbered event since: a gap here, or within the replay,
        /// is the documented one of a resume from the store after a node's crash (only
        /// completions are kept there).
        var resumedJustNow = false
        var turns = 0
        var turnSentAt: UInt64 = 0
        var turnItemID = ""
        var turnUserSeen = false
        var turnResponseSeen = false
        var turnDeadline: UInt64 = 0
        var turnNudged = false
        var pendingTurn = false
        /// Item ids the client was told were done, in order.
        var done: [String] = []
        var doneSet: Set<String> = []
        var checksLeft = 0
    }

    struct Summary {
        var json: JSON
        var table: String
        var passed: Bool
    }

    let pool: ConnectionPool
    private let target: LoadTarget
    private let basePath: String
    private let count: Int
    private let interval: UInt64
    private let duration: Double
    private let connectTimeout: Double
    private let settleSeconds: Double
    private var sessions: [Session]
    private let offsets: [UInt64]
    private var scheduleStart = UInt64.max
    private var scheduleEnd = UInt64.max
    private var nextSlot = 0
    private var round: UInt64 = 0
    private var ackTick: UInt64 = 0
    private var checking = false

    // Counts.
    private var created = 0
    private var turnsSent = 0
    private var turnsCompleted = 0
    private var turnsResent = 0
    private var responsesNudged = 0
    private var turnsUnanswered = 0
    private var turnsSkipped = 0
    private var statuses: [String: Int] = [:]
    private var turnLatency = LatencyRecorder()
    private var itemDoneEvents = 0
    private var responseDoneEvents = 0
    private var drops: [String: Int] = [:]
    private var reconnectFailures: [String: Int] = [:]
    private var resumes = 0
    private var replayedEvents = 0
    private var resumeFailures: [String: Int] = [:]
    private var ended: [String: Int] = [:]
    private var resumeLatency = LatencyRecorder()
    private var seqGaps = 0
    /// Gaps at a resume: after a node's crash the store replays the completions alone
    /// (docs/protocol.md, "Resume"); counted, not a problem.
    private var seqGapsAtResume = 0
    private var seqDuplicates = 0
    private var errors: [String: Int] = [:]
    private var itemsChecked = 0
    private var itemsRetrieved = 0
    private var itemsLost = 0
    private var itemsUnreachable = 0
    private var lostExamples: [String] = []
    private var openAtEnd = 0
    private var connectSeconds = 0.0

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
        sessions = Array(repeating: Session(), count: count)
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
        while !(pool.settled && created + sessions.filter({ $0.state == .dead }).count >= count) && MonotonicClock.nanoseconds() < connectBound {
            step(wait: 10)
            progress.update("connecting  \(Format.grouped(pool.connected))/\(Format.grouped(count))  session.created \(Format.grouped(created))")
        }
        progress.finish()
        connectSeconds = MonotonicClock.seconds(since: start)
        print("connected: \(Format.grouped(created)) sessions in \(Format.fixed(connectSeconds, 1)) s (failed: \(Format.reasons(pool.failed)))")
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
            while next < count && itemsChecked - itemsRetrieved - itemsLost - itemsUnreachable < 20_000 {
                check(next)
                next += 1
                if next % 100 == 0 { break }
            }
            step(wait: 5)
            if next == count && !sessions.contains(where: { $0.checksLeft > 0 }) { break }
        }
        for i in 0..<count where sessions[i].checksLeft > 0 { itemsUnreachable += sessions[i].checksLeft }
        openAtEnd = sessions.filter { $0.state == .ready }.count
        pool.closeAll()
    }

    private func statusLine(_ now: UInt64) -> String {
        let t = Double(Int64(bitPattern: now &- scheduleStart)) / 1e9
        let down = sessions.filter { $0.state == .backoff || $0.state == .connecting || $0.state == .opening }.count
        return "  \(Format.fixed(t, 0)) s  ready \(Format.grouped(sessions.filter { $0.state == .ready }.count))  down \(Format.grouped(down))  dead \(Format.grouped(sessions.filter { $0.state == .dead }.count))  turns \(Format.grouped(turnsSent))/\(Format.grouped(turnsCompleted)) done  resumes \(Format.grouped(resumes))  drops \(Format.grouped(drops.values.reduce(0, +)))"
    }

    private func check(_ slot: Int) {
        guard sessions[slot].state == .ready, let connection = sessions[slot].connection else {
            itemsUnreachable += sessions[slot].done.count
            itemsChecked += sessions[slot].done.count
            return
        }
        for (i, id) in sessions[slot].done.enumerated() {
            send(#"{"type":"conversation.item.retrieve","event_id":"chk_\#(slot)_\#(i)","item_id":"\#(id)"}"#, on: connection)
        }
        sessions[slot].checksLeft = sessions[slot].done.count
        itemsChecked += sessions[slot].done.count
    }

    private func step(wait: Int32) {
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

    private func retry(_ now: UInt64) {
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
                    reconnectFailures[failure.description, default: 0] += 1
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

    private func scheduleRetry(_ slot: Int, _ now: UInt64) {
        let backoff = min(UInt64(50_000_000) << UInt64(min(sessions[slot].attempts, 5)), 1_000_000_000)
        sessions[slot].attempts += 1
        sessions[slot].retryAt = now + backoff
        sessions[slot].state = .backoff
        sessions[slot].connection = nil
    }

    // MARK: Turns

    private func sendDue(_ now: UInt64) {
        while true {
            let due = scheduleStart + offsets[nextSlot] + round * interval
            guard due <= now, due < scheduleEnd else { return }
            if sessions[nextSlot].pendingTurn { turnsSkipped += 1 }
            sessions[nextSlot].pendingTurn = true
            startTurnIfFree(nextSlot, now)
            nextSlot += 1
            if nextSlot == offsets.count {
                nextSlot = 0
                round += 1
            }
        }
    }

    private func startTurnIfFree(_ slot: Int, _ now: UInt64) {
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
        turnsSent += 1
        sendTurn(slot, on: connection)
    }

    private func sendTurn(_ slot: Int, on connection: ClientConnection) {
        send(#"{"type":"conversation.item.create","item":{"id":"\#(sessions[slot].turnItemID)","type":"message","role":"user","content":[{"type":"input_text","text":"\#(TurnsTools.turnText(sessions[slot].turns))"}]}}"#, on: connection)
        send(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#, on: connection)
    }

    /// A turn unanswered 20 s after it was sent (or after the session last came back) gets its
    /// response.create once more; 20 s after that it is counted unanswered.
    private func turnTimeouts(_ now: UInt64) {
        for slot in 0..<count where sessions[slot].turnSentAt != 0 && sessions[slot].turnDeadline <= now && sessions[slot].state == .ready {
            if !sessions[slot].turnNudged, !sessions[slot].turnResponseSeen, let connection = sessions[slot].connection {
                sessions[slot].turnNudged = true
                sessions[slot].turnDeadline = now + 20_000_000_000
                responsesNudged += 1
                if sessions[slot].turnUserSeen {
                    send(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#, on: connection)
                } else {
                    sendTurn(slot, on: connection)
                }
            } else {
                turnsUnanswered += 1
                sessions[slot].turnSentAt = 0
            }
        }
    }

    /// The replay after session.resumed is over: a turn the server never received is sent again.
    private func replayFinished(_ slot: Int, _ now: UInt64) {
        guard sessions[slot].turnSentAt != 0, let connection = sessions[slot].connection else { return startTurnIfFree(slot, now) }
        sessions[slot].turnDeadline = now + 20_000_000_000
        if !sessions[slot].turnUserSeen {
            turnsResent += 1
            sendTurn(slot, on: connection)
        }
    }

    private func send(_ text: String, on connection: ClientConnection) {
        var text = text
        text.withUTF8 { pool.sendFrame(ClientFrame.text, UnsafeRawBufferPointer($0), on: connection) }
    }

    // MARK: Server events

    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        let slot = connection.slot
        sessions[slot].connection = connection
        sessions[slot].state = .opening
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text, let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self)),
              let type = event["type"]?.string else { return }
        let slot = connection.slot
        let now = MonotonicClock.nanoseconds()
        if let seq = event["seq"]?.int {
            if seq <= sessions[slot].lastSeq {
                seqDuplicates += 1
                return
            }
            if seq != sessions[slot].lastSeq + 1 {
                // Within a replay too: it holds the completions alone when it comes from the store.
                if sessions[slot].resumedJustNow || sessions[slot].replayLeft > 0 { seqGapsAtResume += 1 } else { seqGaps += 1 }
            }
            sessions[slot].resumedJustNow = false
            sessions[slot].lastSeq = seq
            if sessions[slot].replayLeft > 0 {
                replayedEvents += 1
                sessions[slot].replayLeft -= 1
                defer { if sessions[slot].replayLeft == 0 { replayFinished(slot, now) } }
                handle(type, event, slot, now)
                return
            }
        }
        handle(type, event, slot, now)
    }

    private func handle(_ type: String, _ event: JSON, _ slot: Int, _ now: UInt64) {
        switch type {
        case "session.created":
            guard sessions[slot].state == .opening, sessions[slot].token == nil else { return }
            created += 1
            sessions[slot].state = .ready
            sessions[slot].attemptStartedAt = 0
        case "session.resume_token":
            if let token = event["token"]?.string { sessions[slot].token = token }
        case "session.resumed":
            if let token = event["token"]?.string { sessions[slot].token = token }
            resumes += 1
            if sessions[slot].droppedAt != 0 { resumeLatency.record(now - sessions[slot].droppedAt) }
            sessions[slot].droppedAt = 0
            sessions[slot].attempts = 0
            sessions[slot].attemptStartedAt = 0
            sessions[slot].state = .ready
            sessions[slot].replayLeft = event["replayed"]?.int ?? 0
            sessions[slot].resumedJustNow = true
            if sessions[slot].replayLeft == 0 { replayFinished(slot, now) }
        case "conversation.item.added", "conversation.item.created":
            if event["item"]?["id"]?.string == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
        case "conversation.item.done":
            itemDoneEvents += 1
            if let id = event["item"]?["id"]?.string {
                if id == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
                noteDone(slot, id)
            }
        case "response.created":
            if sessions[slot].turnSentAt != 0 { sessions[slot].turnResponseSeen = true }
        case "response.done":
            responseDoneEvents += 1
            let response = event["response"]
            for item in response?["output"]?.array ?? [] { if let id = item["id"]?.string { noteDone(slot, id) } }
            guard sessions[slot].turnSentAt != 0 else { return }
            let status = response?["status"]?.string ?? "(no status)"
            statuses[status, default: 0] += 1
            if status == "completed" {
                turnsCompleted += 1
                turnLatency.record(now - sessions[slot].turnSentAt)
            }
            sessions[slot].turnSentAt = 0
            startTurnIfFree(slot, now)
        case "conversation.item.retrieved":
            guard sessions[slot].checksLeft > 0 else { return }
            sessions[slot].checksLeft -= 1
            itemsRetrieved += 1
        case "error":
            let code = event["error"]?["code"]?.string ?? "(no code)"
            let eventID = event["error"]?["event_id"]?.string ?? event["event_id"]?.string ?? ""
            if code == "resume_token_invalid" || code == "resume_out_of_range" {
                resumeFailures[code, default: 0] += 1
                sessions[slot].state = .dead
                return
            }
            if sessions[slot].checksLeft > 0 && (code == "item_not_found" || eventID.hasPrefix("chk_")) {
                sessions[slot].checksLeft -= 1
                itemsLost += 1
                if lostExamples.count < 10 { lostExamples.append("session \(slot): \(code) \(event["error"]?["message"]?.string ?? "")") }
                return
            }
            errors[code, default: 0] += 1
        default:
            break
        }
    }

    private func noteDone(_ slot: Int, _ id: String) {
        guard !sessions[slot].doneSet.contains(id) else { return }
        sessions[slot].doneSet.insert(id)
        sessions[slot].done.append(id)
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        let slot = connection.slot
        let now = MonotonicClock.nanoseconds()
        let was = sessions[slot].state
        sessions[slot].connection = nil
        guard was != .dead else { return }
        if checking {
            sessions[slot].state = .dead
            return
        }
        if was == .ready || was == .opening {
            drops[reason, default: 0] += 1
            if sessions[slot].droppedAt == 0 { sessions[slot].droppedAt = now }
        } else if sessions[slot].token != nil {
            reconnectFailures[reason, default: 0] += 1
        }
        // Closes that end the session on the server: nothing to resume.
        for code in ["1000", "1002", "1003", "1007", "1008", "1009"] where reason == "server closed with \(code)" {
            ended[reason, default: 0] += 1
            sessions[slot].state = .dead
            return
        }
        guard sessions[slot].token != nil else {
            if sessions[slot].state == .connecting && sessions[slot].attempts == 0 && created < count {
                ended["never opened: \(reason)", default: 0] += 1
            } else {
                ended["dropped before its resume token: \(reason)", default: 0] += 1
            }
            sessions[slot].state = .dead
            return
        }
        sessions[slot].replayLeft = 0
        scheduleRetry(slot, now)
    }

    // MARK: Summary

    func summary(cpu: CPUTime, seconds: Double) -> Summary {
        let dead = sessions.filter { $0.state == .dead }.count
        let dropsTotal = drops.values.reduce(0, +)
        var problems: [String] = []
        if created < count { problems.append("only \(created) of \(count) sessions opened") }
        if itemsLost > 0 { problems.append("\(itemsLost) completed items lost (item_not_found)") }
        if itemsUnreachable > 0 { problems.append("\(itemsUnreachable) completed items on sessions that could not be reached") }
        if !resumeFailures.isEmpty { problems.append("resume failures: \(Format.reasons(resumeFailures))") }
        if turnsUnanswered > 0 { problems.append("\(turnsUnanswered) turns unanswered") }
        if seqGaps > 0 { problems.append("\(seqGaps) gaps in seq") }
        func ms(_ v: UInt64) -> Double { Double(v) / 1e6 }
        let json = JSON.object([
            ("kind", .string("survive")),
            ("target", .string(target.url)),
            ("sessions", .int(count)),
            ("created", .int(created)),
            ("connect_seconds", .number(connectSeconds)),
            ("open_at_end", .int(openAtEnd)),
            ("dead", .int(dead)),
            ("ended", .counts(ended)),
            ("turn_interval_seconds", .number(Double(interval) / 1e9)),
            ("duration_seconds", .number(duration)),
            ("turns_sent", .int(turnsSent)),
            ("turns_completed", .int(turnsCompleted)),
            ("turns_resent_after_resume", .int(turnsResent)),
            ("turns_nudged", .int(responsesNudged)),
            ("turns_unanswered", .int(turnsUnanswered)),
            ("turns_skipped", .int(turnsSkipped)),
            ("response_statuses", .counts(statuses)),
            ("turn_seconds", .object([("p50", .number(ms(turnLatency.percentile(50)) / 1e3)), ("p99", .number(ms(turnLatency.percentile(99)) / 1e3)), ("max", .number(ms(turnLatency.maximum) / 1e3))])),
            ("item_done_events", .int(itemDoneEvents)),
            ("response_done_events", .int(responseDoneEvents)),
            ("items_checked", .int(itemsChecked)),
            ("items_retrieved", .int(itemsRetrieved)),
            ("items_lost", .int(itemsLost)),
            ("items_unreachable", .int(itemsUnreachable)),
            ("lost_examples", .array(lostExamples.map { .string($0) })),
            ("drops", .counts(drops)),
            ("drops_total", .int(dropsTotal)),
            ("reconnect_failures", .counts(reconnectFailures)),
            ("resumes", .int(resumes)),
            ("replayed_events", .int(replayedEvents)),
            ("resume_failures", .counts(resumeFailures)),
            ("drop_to_resumed", turnLatencyJSON(resumeLatency)),
            ("seq_gaps", .int(seqGaps)),
            ("seq_gaps_at_resume", .int(seqGapsAtResume)),
            ("seq_duplicates", .int(seqDuplicates)),
            ("errors", .counts(errors)),
            ("client_cpu_seconds", .number(cpu.user + cpu.system)),
            ("client_cpu_user", .number(cpu.user)),
            ("client_cpu_system", .number(cpu.system)),
            ("wall_seconds", .number(seconds)),
            ("problems", .array(problems.map { .string($0) })),
            ("passed", .bool(problems.isEmpty)),
        ])
        func latency(_ r: LatencyRecorder) -> String {
            r.count == 0 ? "n/a" : "p50 \(LatencyRecorder.format(nanoseconds: r.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: r.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: r.maximum))  (n \(Format.grouped(Int(r.count))))"
        }
        var lines = ["", "survive: \(Format.grouped(count)) sessions, \(Format.fixed(duration, 0)) s of turns, \(Format.fixed(seconds, 1)) s in all"]
        lines.append(Format.row("sessions", "\(Format.grouped(created)) opened, \(Format.grouped(openAtEnd)) open at the end, \(Format.grouped(dead)) gone (\(Format.reasons(ended)))", width: 24))
        lines.append(Format.row("turns", "\(Format.grouped(turnsSent)) sent, \(Format.grouped(turnsCompleted)) completed, \(turnsResent) re-sent after resume, \(responsesNudged) nudged, \(turnsUnanswered) unanswered, \(turnsSkipped) skipped", width: 24))
        lines.append(Format.row("turn time", latency(turnLatency), width: 24))
        lines.append(Format.row("completed items", "\(Format.grouped(itemsChecked)) seen done (\(Format.grouped(itemDoneEvents)) item.done, \(Format.grouped(responseDoneEvents)) response.done events)", width: 24))
        lines.append(Format.row("completed items lost", "\(itemsLost) (item_not_found); \(itemsUnreachable) on unreachable sessions; \(Format.grouped(itemsRetrieved)) retrieved", width: 24))
        lines.append(Format.row("drops", "\(Format.grouped(dropsTotal)) (\(Format.reasons(drops)))", width: 24))
        lines.append(Format.row("failed attempts", Format.reasons(reconnectFailures), width: 24))
        lines.append(Format.row("resumes", "\(Format.grouped(resumes)) session.resumed, \(Format.grouped(replayedEvents)) events replayed; failures: \(resumeFailures.isEmpty ? "none" : Format.reasons(resumeFailures))", width: 24))
        lines.append(Format.row("drop → session.resumed", latency(resumeLatency), width: 24))
        lines.append(Format.row("seq", "\(seqGaps) gaps, \(seqDuplicates) duplicates; \(seqGapsAtResume) gaps at a resume from the store (only completions are kept there)", width: 24))
        lines.append(Format.row("errors", errors.isEmpty ? "none" : Format.reasons(errors), width: 24))
        lines.append(Format.row("client CPU", "\(Format.fixed(cpu.user + cpu.system, 1)) s (\(Format.fixed((cpu.user + cpu.system) / seconds * 100, 0)) % of a core)", width: 24))
        lines.append(problems.isEmpty ? "PASS" : "FAIL: " + problems.joined(separator: "; "))
        return Summary(json: json, table: lines.joined(separator: "\n"), passed: problems.isEmpty)
    }

    private func turnLatencyJSON(_ r: LatencyRecorder) -> JSON {
        .object([("count", .int(Int(r.count))), ("p50_ms", .number(Double(r.percentile(50)) / 1e6)),
                 ("p99_ms", .number(Double(r.percentile(99)) / 1e6)), ("max_ms", .number(Double(r.maximum) / 1e6))])
    }
}
