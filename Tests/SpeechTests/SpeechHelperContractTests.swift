import JSON
import Models
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
import SpeechContracts
#endif

/// The speech helper's contract, both sides: the Swift table and the Python one agree, a client of
/// another protocol version is refused at its first message, and a cancelled decode never runs.
@Suite(.serialized) struct SpeechHelperContractTests {
    /// Fails when SpeechHelperContract.swift and parley_speech.py's "Contract" section drift apart:
    /// the helper prints its table (`--contract`, no model loaded) and it is compared whole.
    @Test func theSwiftAndPythonTablesAreTheSame() throws {
        let printed = try Subprocess.capture([".venv-speech/bin/python", "helpers/parley_speech.py", "--contract"])
        #expect(printed.status == 0, "\(printed.stderr)")
        let python = try JSON(parsing: String(printed.stdout.filter { $0 != "\n" }))
        let swift = SpeechHelperContract.table
        let keys = Set((python.object ?? []).map { $0.0 } + (swift.object ?? []).map { $0.0 })
        for key in keys.sorted() {
            #expect(python[key] == swift[key], "\(key): Python \(python[key].map { "\($0)" } ?? "none"), Swift \(swift[key].map { "\($0)" } ?? "none")")
        }
    }

    /// A blocking connection to the helper with a 10 s receive time-out, and its frames.
    struct Client {
        let fd: Int32
        var reader = SpeechHelperFrame.Reader()
        var early: [SpeechHelperFrame] = []

        init(_ path: String) throws {
            fd = try Sys.streamSocket(family: AF_UNIX, .blocking)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = try Sys.connect(fd, to: try #require(SocketAddress.unix(path: path)))
        }

        func send(_ frames: SpeechHelperFrame...) {
            let bytes = frames.flatMap { $0.encoded() }
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Frames until one with `id` (those before it kept in `early`); nil if the helper closed.
        mutating func answer(_ id: Int) throws -> SpeechHelperFrame? {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                if let index = early.firstIndex(where: { $0.header["id"]?.int == id }) { return early.remove(at: index) }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                early += try buffer[..<n].withUnsafeBytes { try reader.read($0) }
            }
        }

        /// How many of `ids` have been answered by now (a `stats` round trip flushes what came
        /// before it); then waits for the rest, so the next test finds the helper idle.
        mutating func answeredNow(_ ids: Range<Int>) throws -> Int {
            send(SpeechHelperFrame(.stats, id: 99))
            _ = try #require(try answer(99))
            let answered = early.filter { ids.contains($0.header["id"]?.int ?? 0) }.count
            for id in ids { _ = try answer(id) }
            return answered
        }

        /// Frames until the helper's `load` saying `busy` (those before it kept in `early`);
        /// nil if the helper closed or said nothing within the receive time-out.
        mutating func load(busy: Bool) throws -> SpeechHelperFrame? {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                if let index = early.firstIndex(where: { $0.header["op"]?.string == "load" && $0.header["busy"]?.bool == busy }) {
                    return early.remove(at: index)
                }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                early += try buffer[..<n].withUnsafeBytes { try reader.read($0) }
            }
        }

        func close() { Sys.close(fd) }
    }

    static let hello = SpeechHelperFrame(.hello, id: 0, [("version", .int(SpeechHelperContract.version))])

    /// A helper with Whisper and one transcription worker (none kept for the work a user waits
    /// on, HelperLanesTests has that): what waits is in its queues.
    static let oneWorker = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en", "--waited-workers", "0"], workers: 1)

    /// One transcription worker and a box's speech capacity of two jobs.
    static let capacityTwo = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en", "--capacity", "2", "--waited-workers", "0"], workers: 1)

    /// The box's speech work is counted where it queues (issue 49): when it reaches the capacity
    /// every connection (each a loop of any worker) is told `load` busy, a periodic partial is
    /// refused `overloaded` at once and counted `shed`, the work someone waits on is still done,
    /// and when it falls below every connection is told the box is not busy. Four decodes of 8 s
    /// on one worker: busy from the second asked until the third has ended, three decodes' time.
    @Test func atItsCapacityTheHelperTellsEveryConnectionAndShedsPartials() throws {
        let helper = try #require(Self.capacityTwo, "the speech helper did not start")
        var talker = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 8)
        var other = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 1)
        defer { talker.close(); other.close() }
        let greeting = try #require(try other.answer(0), "no answer to hello")
        #expect(greeting.header["load"]?["busy"]?.bool == false)
        for id in 10..<14 { talker.send(SpeechHelperFrame(.partial, id: UInt64(id), [("stream", .int(1))])) }
        _ = try #require(try other.load(busy: true), "the other connection was not told the box is busy")
        other.send(SpeechHelperFrame(.partial, id: 20, [("stream", .int(1)), ("fast", .bool(true))]))
        let shed = try #require(try other.answer(20), "the partial was not answered")
        #expect(shed.header["error"]?.string == SpeechHelperContract.ErrorCode.overloaded.rawValue, "\(shed.header)")
        for id in 10..<14 {
            let answer = try #require(try talker.answer(id), "decode \(id) was not answered")
            #expect(answer.header["error"] == nil, "decode \(id): \(answer.header)")
        }
        _ = try #require(try other.load(busy: false), "the other connection was not told the box is no longer busy")
        other.send(SpeechHelperFrame(.stats, id: 21))
        let stats = try #require(try other.answer(21))
        // Below the capacity (a decode's count is given back just after its answer is sent, so
        // the last may still be counted here).
        #expect(stats.header["shed"]?.int == 1 && (stats.header["work"]?.int ?? 2) < 2 && stats.header["busy"]?.bool == false, "\(stats.header)")
    }

    /// A connection with a stream of `seconds` of audio open as `stream`.
    static func streaming(_ path: String, stream: UInt64, seconds: Int) throws -> Client {
        let client = try Client(path)
        client.send(hello, SpeechHelperFrame(.open, id: stream, [("rate", .int(16_000))]))
        let samples = audio(seconds: seconds)
        for start in stride(from: 0, to: samples.count, by: 16_000) {
            client.send(SpeechHelperFrame(.append, id: stream, payload: PCMBytes.of(samples[start..<min(samples.count, start + 16_000)])))
        }
        return client
    }

    /// One connection asks for ten decodes, then another for one: the helper serves connections in
    /// turn, so the second's answer comes before most of the first's (with one worker, after the
    /// two of the first's that ran or were next; one more may end while the stats are asked for).
    /// First come, first served would answer all nine first.
    @Test func oneConnectionsQueueCannotStarveAnother() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var busy = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 4)
        var other = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 4)
        defer { busy.close(); other.close() }
        for id in 10..<20 { busy.send(SpeechHelperFrame(.partial, id: UInt64(id), [("stream", .int(1))])) }
        // Its first decode (hundreds of ms) is under way before the other connection asks.
        _ = try #require(try busy.answer(10))
        other.send(SpeechHelperFrame(.partial, id: 50, [("stream", .int(1))]))
        _ = try #require(try other.answer(50), "the second connection was not answered")
        let answeredBefore = try busy.answeredNow(11..<20)
        #expect(answeredBefore <= 3, "\(answeredBefore) of the first connection's decodes were answered before the second's one")
    }

    /// A turn's final text is decoded before the periodic partials waiting ahead of it (from this
    /// connection or, with one helper a box, any worker's): with one worker, after the partial
    /// that was running, and perhaps one more that ended while the stats were asked for.
    @Test func aFinalDecodeGoesBeforeWaitingPartials() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 4)
        defer { client.close() }
        client.send(SpeechHelperFrame(.open, id: 2, [("rate", .int(16_000))]),
                    SpeechHelperFrame(.append, id: 2, payload: PCMBytes.of(Self.audio(seconds: 2)[...])))
        for id in 10..<20 { client.send(SpeechHelperFrame(.partial, id: UInt64(id), [("stream", .int(1)), ("fast", .bool(true))])) }
        client.send(SpeechHelperFrame(.finish, id: 30, [("stream", .int(2))]))
        _ = try #require(try client.answer(30), "the final decode was not answered")
        let partialsBefore = try client.answeredNow(10..<20)
        #expect(partialsBefore <= 2, "\(partialsBefore) partials were answered before the final text")
    }

    /// A decode a paused reply waits on (`reply`) goes before the turn ends waiting ahead of it:
    /// with one worker, after the decode that was running, and perhaps one more that ended while
    /// the stats were asked for. In the urgent lane it would wait for all ten.
    @Test func aDecodeAPausedReplyWaitsOnGoesBeforeOtherTurnsEnds() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 4)
        defer { client.close() }
        client.send(SpeechHelperFrame(.open, id: 2, [("rate", .int(16_000))]),
                    SpeechHelperFrame(.append, id: 2, payload: PCMBytes.of(Self.audio(seconds: 1)[...])))
        for id in 10..<20 { client.send(SpeechHelperFrame(.partial, id: UInt64(id), [("stream", .int(1))])) }
        client.send(SpeechHelperFrame(.partial, id: 30, [("stream", .int(2)), ("fast", .bool(true)), ("reply", .bool(true))]))
        _ = try #require(try client.answer(30), "the decode the reply waits on was not answered")
        let endsBefore = try client.answeredNow(10..<20)
        #expect(endsBefore <= 2, "\(endsBefore) turn-end decodes were answered before the one a reply waits on")
    }

    /// More requests of one kind than a connection may have waiting are answered `overloaded` at
    /// once; the helper goes on serving the rest.
    @Test func aConnectionsQueueIsBounded() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try Self.streaming(helper.status.socketPath, stream: 1, seconds: 1)
        defer { client.close() }
        let count = SpeechHelperContract.queuePerConnection + 8
        for id in 100..<(100 + count) { client.send(SpeechHelperFrame(.partial, id: UInt64(id), [("stream", .int(1))])) }
        var overloaded = 0, decoded = 0
        for id in 100..<(100 + count) {
            let answer = try #require(try client.answer(id), "request \(id) was never answered")
            if answer.header["error"]?.string == SpeechHelperContract.ErrorCode.overloaded.rawValue { overloaded += 1 } else { decoded += 1 }
        }
        // One runs and 32 wait; the rest are refused (a few more run if the worker is quick).
        #expect(overloaded >= 1 && overloaded <= count - SpeechHelperContract.queuePerConnection, "\(overloaded) overloaded, \(decoded) decoded")
        #expect(decoded >= SpeechHelperContract.queuePerConnection)
    }

    /// A first message of another version is answered with the helper's version and
    /// `version_mismatch`, and the connection closed; no request on it is served.
    @Test func anotherProtocolVersionIsRefusedAtTheFirstMessage() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        var client = try Client(helper.status.socketPath)
        defer { client.close() }
        client.send(SpeechHelperFrame(.hello, id: 1, [("version", .int(1))]), SpeechHelperFrame(.stats, id: 2))
        let answer = try #require(try client.answer(1), "no answer to hello")
        #expect(answer.header["error"]?.string == SpeechHelperContract.ErrorCode.versionMismatch.rawValue)
        #expect(answer.header["version"]?.int == SpeechHelperContract.version)
        #expect(try client.answer(2) == nil, "a request after a refused hello was answered")
    }

    /// Requests before `hello` close the connection: the version is checked before anything is served.
    @Test func aRequestBeforeHelloClosesTheConnection() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        var client = try Client(helper.status.socketPath)
        defer { client.close() }
        client.send(SpeechHelperFrame(.stats, id: 1))
        #expect(try client.answer(1) == nil)
    }

    /// Speech-like audio (a sweep between words' pitches, with pauses), pcm16 at 16 kHz.
    static func audio(seconds: Int) -> [Int16] {
        (0..<(seconds * 16_000)).map { i in
            let t = Double(i) / 16_000
            let voiced = Int(t * 3) % 4 != 3
            return voiced ? Int16(6_000 * sin(2 * .pi * (150 + 100 * sin(t)) * t)) : 0
        }
    }

    /// On a helper with one transcription worker, a long final decode holds it; a partial asked
    /// behind it and cancelled at once is dropped from the queue: it is never answered, and the
    /// helper's count of decodes grows by the one that ran, its count of cancelled jobs by one.
    @Test func aCancelledTranscriptionNeverDecodes() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try Client(helper.status.socketPath)
        defer { client.close() }
        let samples = Self.audio(seconds: 8)
        client.send(Self.hello, SpeechHelperFrame(.stats, id: 1))
        let before = try #require(try client.answer(1))
        var frames = [SpeechHelperFrame(.open, id: 10, [("rate", .int(16_000))]), SpeechHelperFrame(.open, id: 20, [("rate", .int(16_000))])]
        for start in stride(from: 0, to: samples.count, by: 16_000) {
            let piece = PCMBytes.of(samples[start..<min(samples.count, start + 16_000)])
            frames += [SpeechHelperFrame(.append, id: 10, payload: piece), SpeechHelperFrame(.append, id: 20, payload: piece)]
        }
        // The whole-window decode of 8 s takes hundreds of ms on this machine's cores; the
        // partial and its cancel arrive in the same write, read one after the other.
        frames += [SpeechHelperFrame(.finish, id: 11, [("stream", .int(10))]), SpeechHelperFrame(.partial, id: 21, [("stream", .int(20))]),
                   SpeechHelperFrame(.cancel, id: 21), SpeechHelperFrame(.finish, id: 22, [("stream", .int(20))])]
        for frame in frames { client.send(frame) }
        let first = try #require(try client.answer(11), "the first decode was not answered")
        #expect(first.header["text"]?.string != nil, "\(first.header)")
        let last = try #require(try client.answer(22), "the decode after the cancelled one was not answered")
        #expect(last.header["text"]?.string != nil, "\(last.header)")
        client.send(SpeechHelperFrame(.stats, id: 2))
        let after = try #require(try client.answer(2))
        #expect(!client.early.contains { $0.header["id"]?.int == 21 }, "the cancelled partial was answered: \(client.early)")
        #expect((after.header["decodes"]?.int ?? 0) - (before.header["decodes"]?.int ?? 0) == 2, "\(after.header)")
        #expect((after.header["cancelled"]?.int ?? 0) - (before.header["cancelled"]?.int ?? 0) == 1, "\(after.header)")
    }

    /// A cancel for a request that has already been answered (or never was) is forgotten: the
    /// helper holds no set of cancelled ids that could grow, and goes on serving.
    @Test func aLateCancelIsForgotten() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        var client = try Client(helper.status.socketPath)
        defer { client.close() }
        client.send(Self.hello, SpeechHelperFrame(.stats, id: 1))
        _ = try #require(try client.answer(1))
        for id in 100..<1_100 { client.send(SpeechHelperFrame(.cancel, id: UInt64(id))) }
        client.send(SpeechHelperFrame(.stats, id: 2))
        let stats = try #require(try client.answer(2), "the helper stopped answering after 1,000 late cancels")
        #expect(stats.header["connections"]?.int ?? 0 >= 1)
    }
}

/// pcm16 little-endian bytes of samples.
enum PCMBytes {
    static func of(_ samples: ArraySlice<Int16>) -> [UInt8] {
        samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }
}
