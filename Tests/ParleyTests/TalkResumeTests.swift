import Glibc
import JSON
import Loop
import Testing
import TestSupport
@testable import parley

/// `parley talk`'s resume decisions (TalkResume): what it keeps from the server's events, when it
/// acknowledges, which closes it reconnects after, how long it waits and where it connects.
@Suite struct TalkResumeTests {
    func event(_ text: String) -> JSON { (try? JSON(parsing: text)) ?? .null }

    /// A session the server has numbered up to `seq` and given `token`.
    func session(token: String = "rt_first", seq: Int = 1, grace: Int = 30) -> TalkResume {
        var resume = TalkResume()
        _ = resume.note(event(#"{"type":"session.created","seq":1}"#))
        _ = resume.note(event(#"{"type":"session.resume_token","token":"\#(token)","grace_seconds":\#(grace),"last_seq":1}"#))
        if seq > 1 { _ = resume.note(event(#"{"type":"response.output_text.delta","delta":"x","seq":\#(seq)}"#)) }
        return resume
    }

    @Test func itAsksForAResumableSessionAndThenForItsSessionBack() {
        var resume = TalkResume()
        #expect(resume.target("/ws") == "/ws?resume=1")
        #expect(resume.target("/v1/realtime?model=m") == "/v1/realtime?model=m&resume=1")
        resume = session(token: "rt_abc", seq: 7)
        #expect(resume.target("/ws") == "/ws?resume_token=rt_abc&last_seq=7")
    }

    @Test func theNewestTokenAndTheLastSeqAreKept() {
        var resume = session(token: "rt_first", seq: 4)
        // A draining server's fresh token (no seq: it is a control event) replaces the first.
        #expect(resume.note(event(#"{"type":"session.resume_token","token":"rt_drain","grace_seconds":10,"last_seq":4}"#)) == TalkResume.Outcome.none)
        #expect(resume.token == "rt_drain" && resume.lastSeq == 4 && resume.graceSeconds == 10)
        // A resume uses it up: session.resumed brings the next, and replayed events move the seq on.
        #expect(resume.note(event(#"{"type":"session.resumed","session_id":"sess_1","token":"rt_next","last_seq":4,"replayed":3}"#)) == .resumed(replayed: 3))
        _ = resume.note(event(#"{"type":"response.done","seq":7}"#))
        #expect(resume.token == "rt_next" && resume.lastSeq == 7)
    }

    @Test func aRefusedResumeLosesTheSession() {
        var resume = session(seq: 5)
        let outcome = resume.note(event(#"{"type":"error","error":{"type":"invalid_request_error","code":"resume_token_invalid","message":"no such session"}}"#))
        #expect(outcome == .lost("no such session"))
        #expect(resume.token == nil && resume.lastSeq == 0 && resume.target("/ws") == "/ws?resume=1")
        #expect(resume.delay(attempt: 0, elapsed: 0) == nil)
        var behind = session(seq: 5)
        #expect(behind.note(event(#"{"type":"error","error":{"code":"resume_out_of_range","message":"too far"}}"#)) == .lost("too far"))
        // Other errors are the conversation's, not the connection's.
        var other = session(seq: 5)
        #expect(other.note(event(#"{"type":"error","error":{"code":"invalid_value","message":"no"}}"#)) == TalkResume.Outcome.none)
        #expect(other.token == "rt_first")
    }

    @Test func acksGoOutOnlyWhenNewEventsCame() {
        var resume = session(seq: 3)
        #expect(resume.ack() == #"{"type":"session.ack","seq":3}"#)
        #expect(resume.ack() == nil)
        _ = resume.note(event(#"{"type":"response.done","seq":9}"#))
        #expect(resume.ack() == #"{"type":"session.ack","seq":9}"#)
    }

    @Test func closesThatEndTheSessionAreNotRetried() {
        for code: UInt16 in [1000, 1002, 1003, 1007, 1008, 1009] { #expect(!TalkResume.parks(closeCode: code), "\(code)") }
        for code: UInt16? in [nil, 1001, 1006, 1011, 1012, 4000] { #expect(TalkResume.parks(closeCode: code), "\(String(describing: code))") }
    }

    @Test func reconnectsBackOffUpToFourSecondsWithinTheGraceWindow() {
        let resume = session(grace: 30)
        #expect((0..<8).map { resume.delay(attempt: $0, elapsed: 0) } == [0.25, 0.5, 1, 2, 4, 4, 4, 4])
        #expect(resume.delay(attempt: 0, elapsed: 29.5) == 0.25)
        // An attempt that would land after the server let the session go is not made.
        #expect(resume.delay(attempt: 4, elapsed: 27) == nil)
        #expect(resume.delay(attempt: 0, elapsed: 30) == nil)
        // Before the server gave a token there is nothing to resume.
        #expect(TalkResume().delay(attempt: 0, elapsed: 0) == nil)
    }
}

/// `parley talk` against a real server whose socket drops in the middle of a reply.
@Suite struct TalkReconnectTests {
    @Test func talkResumesWhenItsSocketDropsMidReplyAndPrintsTheWholeReply() throws {
        // A model slow enough that the reply is in flight for about two seconds.
        let model = try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 15 --reply-tokens 30")
        let server = try ServerProcess(arguments: "--llm openai --llm-base-url http://127.0.0.1:\(model.port)/v1 --llm-model m --transcriber none --synthesizer none",
                                       environment: "OPENAI_API_KEY=sk-talk-resume-test")
        let proxy = try DroppingProxy(to: server.port, cutAfter: 3)
        let result = try Subprocess.capture([ServerProcess.parleyPath, "talk", "ws://127.0.0.1:\(proxy.port)", "--json", "--text", "hello"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("reconnecting") && result.stderr.contains("reconnected ("), "stderr: \(result.stderr)")
        // Every event once, in order, across the two sockets; the reply streamed whole.
        let events = result.stdout.split(separator: "\n").compactMap { try? JSON(parsing: $0) }
        let seqs = events.compactMap { $0["seq"]?.int }
        #expect(!seqs.isEmpty && seqs == Array(1...(seqs.last ?? 1)), "\(seqs)")
        #expect(events.contains { $0["type"]?.string == "session.resumed" && ($0["replayed"]?.int ?? 0) > 0 })
        let streamed = events.filter { $0["type"]?.string == "response.output_text.delta" }.compactMap { $0["delta"]?.string }.joined()
        let done = events.last { $0["type"]?.string == "response.done" }
        let whole = done?["response"]?["output"]?.array?.first?["content"]?.array?.first?["text"]?.string
        #expect(done?["response"]?["status"]?.string == "completed" && !streamed.isEmpty && streamed == whole, "\(streamed) vs \(whole ?? "-")")
        #expect(server.metric("parley_sessions_resumed_total{result=\"memory\"}") == 1)
    }

    @Test func talkSaysTheSessionIsLostWhenItCameBackTooLateAndGoesOnInANewOne() throws {
        let model = try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 15 --reply-tokens 30")
        let server = try ServerProcess(arguments: "--llm openai --llm-base-url http://127.0.0.1:\(model.port)/v1 --llm-model m --transcriber none --synthesizer none --resume-grace-seconds 1",
                                       environment: "OPENAI_API_KEY=sk-talk-resume-test")
        // The reconnect reaches the server only after its one-second grace window.
        let proxy = try DroppingProxy(to: server.port, cutAfter: 3, holdLater: 1.6)
        let result = try Subprocess.capture([ServerProcess.parleyPath, "talk", "ws://127.0.0.1:\(proxy.port)", "--json", "--timeout", "8", "--text", "hello"])
        #expect(result.status == 1, "stderr: \(result.stderr) stdout: \(result.stdout)")
        #expect(result.stderr.contains("session lost: ") && result.stderr.contains("starting a new session"), "stderr: \(result.stderr)")
        #expect(server.metric("parley_sessions_resumed_total{result=\"refused\"}") == 1)
    }
}

/// A TCP relay between a client and a server that cuts its first connection once the server has
/// sent `cutAfter` text deltas: both sockets closed, no close frame either way, as when a phone
/// changes networks. Later connections are relayed whole.
final class DroppingProxy: Sendable {
    let port: Int
    private let listener: Int32

    init(to upstream: Int, cutAfter deltas: Int, holdLater: Double = 0) throws {
        let listener = try Sys.streamSocket(family: AF_INET, .blocking)
        self.listener = listener
        try Sys.listen(listener, on: .ipv4(127, 0, 0, 1, port: 0), backlog: 8)
        port = try Sys.localAddress(listener).port
        try Thread.spawn(name: "proxy") {
            var cut: Int? = deltas
            while true {
                guard let client = try? Sys.accept(listener) else { return }
                let limit = cut
                cut = nil
                _ = try? Thread.spawn(name: "relay") {
                    // Later connections wait first, as a client stuck on a bad network would.
                    if limit == nil && holdLater > 0 { usleep(UInt32(holdLater * 1e6)) }
                    DroppingProxy.relay(client, to: upstream, cutAfter: limit)
                }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        Sys.close(listener)
    }

    private static func relay(_ client: Int32, to upstream: Int, cutAfter limit: Int?) {
        let server = try? Sys.streamSocket(family: AF_INET, .blocking)
        defer { Sys.close(client); server.map(Sys.close) }
        guard let server, (try? Sys.connect(server, to: .ipv4(127, 0, 0, 1, port: UInt16(upstream)))) == true else { return }
        let needle = Array("output_text.delta".utf8)
        var seen = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&fds, 2, 1_000) >= 0 else { return }
            for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                let n = read(fds[from].fd, &buffer, buffer.count)
                guard n > 0 else { return }
                if from == 1, let limit {
                    seen += (0...max(0, n - needle.count)).filter { buffer[$0..<($0 + needle.count)].elementsEqual(needle) }.count
                    if seen >= limit { return }
                }
                var offset = 0
                while offset < n {
                    let written = buffer[offset..<n].withUnsafeBytes { write(fds[to].fd, $0.baseAddress, $0.count) }
                    if written < 0 && errno == EAGAIN {
                        var out = pollfd(fd: fds[to].fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&out, 1, 1_000)
                        continue
                    }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }
}
