import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load dial-out`: calls placed out at a steady rate through Parley's API
/// (scripts/benchmarks/bench-dial-out.sh).
struct DialOutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dial-out",
        abstract: "Place calls out at steady rates through POST /v1/realtime/calls; print one JSON line a rate.",
        discussion: """
            For each rate, `POST /v1/realtime/calls` with a SIP transport (--trunk, a number of its own \
            each) every 1/RATE s for --seconds, each call hung up (`POST /v1/realtime/calls/ID/hangup`) \
            --hold s after it was placed. A line a rate: calls placed and their statuses, the API's \
            answer time (the call is placed when it answers 201), the answered calls and their \
            INVITE-to-answer time from /metrics (parley_sip_call_answer_seconds), the server's and this \
            client's CPU seconds. Bounded: at most RATE * SECONDS calls a rate, each held HOLD s, each \
            request 10 s at most.
            """)

    @Option(help: "The server's HTTP base URL; loopback addresses only.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "The server's process id, for its CPU (/proc/PID/stat).")
    var serverPid: Int32

    @Option(help: "Calls a second, comma-separated: one run each.")
    var rates = "5,10,20,40"

    @Option(help: "Seconds each rate places calls.")
    var seconds = 10.0

    @Option(help: "Seconds each call is held before it is hung up.")
    var hold = 3.0

    @Option(help: "The SIP trunk the calls go out through (the server's --sip-trunk NAME).")
    var trunk = "sipp"

    func validate() throws {
        guard url.hasPrefix("http://") else { throw ValidationError("--url must be http://HOST:PORT") }
        guard !parsedRates.isEmpty, parsedRates.allSatisfy({ $0 > 0 && $0 <= 1000 }) else { throw ValidationError("--rates: numbers in (0, 1000]") }
        guard seconds > 0, seconds <= 3600, hold >= 0, hold <= 3600 else { throw ValidationError("--seconds (0, 3600], --hold [0, 3600]") }
    }

    var parsedRates: [Double] { rates.split(separator: ",").compactMap { Double($0.filter { $0 != " " }) } }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let target = try LoadTarget("ws://" + url.dropFirst("http://".count))
        let server = ProcessFigures(pid: serverPid)
        for rate in parsedRates {
            let before: ServerMetrics
            do { before = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
            let serverBefore = server.cpuSeconds ?? 0, clientBefore = CPUTime.ofSelf()
            var exchanges = HTTPExchanges(target: target)
            var statuses: [String: Int] = [:]
            var latencies: [Double] = []
            var hangups: [(due: UInt64, id: String)] = []
            let count = Int(rate * seconds)
            let start = MonotonicClock.nanoseconds()
            var placed = 0
            var placing = 0.0
            while placed < count || exchanges.active > 0 || !hangups.isEmpty {
                let now = MonotonicClock.nanoseconds()
                while placed < count && start + UInt64(Double(placed) / rate * 1e9) <= now {
                    let body = #"{"transport":{"type":"sip","destination":"+1555\#(Self.digits(placed % 10_000_000))","trunk":"\#(trunk)"}}"#
                    exchanges.post("/v1/realtime/calls", body: body, tag: "call")
                    placed += 1
                    if placed == count { placing = MonotonicClock.seconds(since: start) }
                }
                while let first = hangups.first, first.due <= now {
                    hangups.removeFirst()
                    exchanges.post("/v1/realtime/calls/\(first.id)/hangup", body: "", tag: "hangup")
                }
                let nextCall = placed < count ? start + UInt64(Double(placed) / rate * 1e9) : UInt64.max
                let wake = min(nextCall, hangups.first?.due ?? .max)
                let wait = wake == .max ? 100 : Int32(min(100, wake > now ? (wake - now) / 1_000_000 + 1 : 0))
                for done in exchanges.step(timeoutMilliseconds: wait) where done.tag == "call" {
                    statuses[String(done.status), default: 0] += 1
                    guard done.status == 201 else { continue }
                    latencies.append(done.seconds)
                    if let id = (try? JSON(parsing: String(decoding: done.body, as: UTF8.self)))?["id"]?.string {
                        hangups.append((MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(hold), id))
                    }
                }
            }
            usleep(1_000_000)
            let after: ServerMetrics
            do { after = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
            let name = "parley_sip_call_answer_seconds"
            let answered = (after.value(name + "_count") ?? 0) - (before.value(name + "_count") ?? 0)
            let answerSum = (after.value(name + "_sum") ?? 0) - (before.value(name + "_sum") ?? 0)
            var answerP95: Double? = nil
            if let b = ServerHistogram(name, in: after) { answerP95 = (ServerHistogram(name, in: before).flatMap { b.since($0) } ?? b).percentileBound(95) }
            latencies.sort()
            func percentile(_ p: Double) -> JSON {
                latencies.isEmpty ? .null : .number((latencies[min(latencies.count - 1, Int(p * Double(latencies.count)))] * 10_000).rounded() / 10)
            }
            func round2(_ x: Double) -> JSON { .number((x * 100).rounded() / 100) }
            print(JSON.object([
                ("rate_asked", .number(rate)), ("placed_per_second", .number((Double(count) / max(placing, 1e-9) * 10).rounded() / 10)),
                ("calls", .int(count)), ("statuses", .counts(statuses)), ("answered", .int(Int(answered))),
                ("api_p50_ms", percentile(0.5)), ("api_p95_ms", percentile(0.95)),
                ("answer_mean_ms", answered > 0 ? .number((answerSum / answered * 10_000).rounded() / 10) : .null),
                ("answer_p95_bucket_s", answerP95.map { $0.isFinite ? JSON.number($0) : .string("+Inf") } ?? .null),
                ("server_cpu_s", round2((server.cpuSeconds ?? 0) - serverBefore)), ("client_cpu_s", round2((CPUTime.ofSelf() - clientBefore).total)),
                ("window_s", .number((MonotonicClock.seconds(since: start) * 10).rounded() / 10)),
            ]).description)
            Console.flush()
        }
    }

    static func digits(_ n: Int) -> String {
        let text = String(n)
        return String(repeating: "0", count: max(0, 7 - text.count)) + text
    }
}

/// HTTP/1.1 requests in flight at once, each on a connection of its own (`Connection: close`),
/// driven by poll(2). Plain HTTP, loopback: what `dial-out` needs.
struct HTTPExchanges {
    struct Done {
        let tag: String
        /// 0: no answer (refused, reset, or 10 s without one).
        let status: Int
        let body: [UInt8]
        let seconds: Double
    }

    private struct Exchange {
        let fd: Int32
        let tag: String
        let startedAt: UInt64
        var request: [UInt8]
        var sent = 0
        var response: [UInt8] = []
    }

    static let timeout: UInt64 = 10_000_000_000
    let target: LoadTarget
    private var exchanges: [Exchange] = []
    private var failedAtStart: [Done] = []

    init(target: LoadTarget) { self.target = target }

    var active: Int { exchanges.count + failedAtStart.count }

    mutating func post(_ path: String, body: String, tag: String) {
        let bytes = Array(body.utf8)
        let head = "POST \(path) HTTP/1.1\r\nHost: \(target.hostHeader)\r\nUser-Agent: parley-load\r\nContent-Type: application/json\r\n"
            + (getenv("PARLEY_LOAD_API_KEY").map { "Authorization: Bearer \(String(cString: $0))\r\n" } ?? "")
            + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        switch ClientSocket.connect(to: target.address, from: nil) {
        case .success(let fd): exchanges.append(Exchange(fd: fd, tag: tag, startedAt: MonotonicClock.nanoseconds(), request: Array(head.utf8) + bytes))
        case .failure: failedAtStart.append(Done(tag: tag, status: 0, body: [], seconds: 0))
        }
    }

    /// Moves every exchange on, waiting up to `timeoutMilliseconds` for one to be ready; returns
    /// those that ended.
    mutating func step(timeoutMilliseconds: Int32) -> [Done] {
        var done = failedAtStart
        failedAtStart = []
        guard !exchanges.isEmpty else {
            if done.isEmpty && timeoutMilliseconds > 0 { usleep(UInt32(timeoutMilliseconds) * 1000) }
            return done
        }
        var entries = exchanges.map { pollfd(fd: $0.fd, events: Int16($0.sent < $0.request.count ? POLLOUT : POLLIN), revents: 0) }
        _ = poll(&entries, nfds_t(entries.count), done.isEmpty ? timeoutMilliseconds : 0)
        var chunk = [UInt8](repeating: 0, count: 16384)
        var kept: [Exchange] = []
        for (i, var exchange) in exchanges.enumerated() {
            var finished: Int? = nil
            if entries[i].revents != 0 {
                if exchange.sent < exchange.request.count {
                    switch exchange.request[exchange.sent...].withUnsafeBytes({ ClientSocket.write(exchange.fd, $0) }) {
                    case .transferred(let n): exchange.sent += n
                    case .wouldBlock: break
                    case .endOfFile, .failed, .tlsFailed: finished = 0
                    }
                } else {
                    switch chunk.withUnsafeMutableBytes({ ClientSocket.read(exchange.fd, into: $0) }) {
                    case .transferred(let n): exchange.response += chunk[0..<n]
                    case .wouldBlock: break
                    case .endOfFile: finished = (try? OfferExchange.response(exchange.response, closed: true))??.status ?? 0
                    case .failed, .tlsFailed: finished = 0
                    }
                    if finished == nil, let response = (try? OfferExchange.response(exchange.response)) ?? nil {
                        finished = response.status
                    }
                }
            }
            if finished == nil && MonotonicClock.nanoseconds() - exchange.startedAt > Self.timeout { finished = 0 }
            if let status = finished {
                let body = status == 0 ? [] : ((try? OfferExchange.response(exchange.response, closed: true))??.body ?? [])
                done.append(Done(tag: exchange.tag, status: status, body: body, seconds: MonotonicClock.seconds(since: exchange.startedAt)))
                ClientSocket.close(exchange.fd)
            } else {
                kept.append(exchange)
            }
        }
        exchanges = kept
        return done
    }
}
