import JSON
import Loop
import Models
import SpeechContracts

/// One loop's connection to the speech helper, on that loop: requests go out framed
/// (`SpeechHelperFrame`), answers come back by `id` in any order, each to its caller on this loop.
/// Every request has a deadline and can be cancelled (the helper drops it if it has not started,
/// and its answer if it has); a request the helper cannot take now (down, starting, the connection
/// lost) fails at once, so a caller's fallback rule serves without waiting.
///
/// A turn's audio crosses once, as a stream (`openStream`, `append`): decodes and verdicts name
/// the stream and the helper reads what it holds. Each new socket's first message is `hello` with
/// `SpeechHelperContract.version`; an answer with another version closes it.
///
/// Made on a loop's first request (`SpeechHelperConnection.on(loop, status)`), kept for the loop's
/// life, and reconnected when the helper comes back as a new generation.
final class SpeechHelperConnection {
    typealias Answer = (Result<SpeechHelperFrame, ModelError>) -> Void

    unowned(unsafe) let loop: EventLoop
    let status: SpeechHelperStatus
    private var socket: SpeechHelperSocket?
    private var nextID: UInt64 = 0
    /// Requests out, by id. A streaming one (`speak`) answers with several frames, its deadline
    /// re-armed by each, until one says `done` (or `error`).
    private var pending: [UInt64: Pending] = [:]
    /// Streams open on the socket, by id.
    private var streams: [UInt64: SpeechHelperStream] = [:]

    private struct Pending {
        let answer: Answer
        var deadline: ScheduledTask
        let timeout: Double
        let streaming: Bool
    }

    init(loop: EventLoop, status: SpeechHelperStatus) {
        self.loop = loop
        self.status = status
        // On a test's clock, time waits for the helper's answers as it waits for offloaded work.
        loop.holdClock { [weak self] in !(self?.pending.isEmpty ?? true) }
    }

    /// Sends the frame `frame(id)` makes, and calls `answer` once: with the helper's reply, or a
    /// failure (unavailable, timed out, lost, refused). Returns the id, for `cancel`, or nil when it
    /// failed at once (the failure is delivered on a later pass, never inside this call, so callers
    /// never see their answer before their request returns).
    @discardableResult
    func request(timeout seconds: Double, streaming: Bool = false, _ frame: (UInt64) -> SpeechHelperFrame, _ answer: @escaping Answer) -> UInt64? {
        guard let socket = connected() else {
            _ = loop.schedule(after: 0) { answer(.failure(ModelError(speechHelper: .unavailable, message: "the speech helper is not running"))) }
            return nil
        }
        let id = newID()
        pending[id] = Pending(answer: answer, deadline: arm(id, seconds), timeout: seconds, streaming: streaming)
        socket.send(frame(id).encoded())
        return id
    }

    private func newID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    private func arm(_ id: UInt64, _ seconds: Double) -> ScheduledTask {
        loop.schedule(after: seconds) { [weak self] in
            self?.finish(id, .failure(ModelError(speechHelper: .timeout, message: "the speech helper did not answer within \(seconds) s")))
        }
    }

    /// The caller no longer wants the answer: the helper is told too, so that a request still
    /// queued there never runs and a running one's answer is dropped (a speak stops after its clause).
    func cancel(_ id: UInt64) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.deadline.cancel()
        socket?.send(SpeechHelperFrame(.cancel, id: id).encoded())
    }

    /// The request need not be made if it has not begun: the helper then answers it `overloaded`
    /// at once; begun, it answers as usual. Either way its answer still comes.
    func supersede(_ id: UInt64) {
        guard pending[id] != nil else { return }
        socket?.send(SpeechHelperFrame(.cancel, id: id, [("queued", .bool(true))]).encoded())
    }

    // MARK: Streams

    /// Opens a stream at `rate` on the socket, decoded as `choice` says (its `open`'s `model` and
    /// `language`; nil, the helper's default recogniser, and the language it finds, among
    /// `foundAmong` if any): nil while the helper cannot be reached. `failed` is called once if the
    /// stream is lost (the connection ends) or the helper refuses it.
    func openStream(rate: Int, _ choice: TranscriptionChoice = TranscriptionChoice(), foundAmong: [String] = [],
                    failed: @escaping (ModelError) -> Void) -> UInt64? {
        guard let socket = connected() else { return nil }
        let id = newID()
        streams[id] = SpeechHelperStream(rate: rate, socket: ObjectIdentifier(socket), failed: failed)
        var fields: [(String, JSON)] = [("rate", .int(rate))]
        if let model = choice.model { fields.append(("model", .string(model))) }
        if let language = choice.language { fields.append(("language", .string(language))) }
        if choice.language == nil, !foundAmong.isEmpty { fields.append(("languages", .array(foundAmong.map(JSON.string)))) }
        socket.send(SpeechHelperFrame(.open, id: id, fields).encoded())
        return id
    }

    /// More of the stream's audio; the helper keeps its last `SpeechHelperContract.streamSeconds`.
    func append(_ samples: [Int16], to id: UInt64) {
        guard !samples.isEmpty, streams[id] != nil else { return }
        guard let socket, !socket.isClosed, streams[id]?.socket == ObjectIdentifier(socket) else {
            return streamFailed(id, ModelError(speechHelper: .unavailable, message: "the speech helper's connection was lost"))
        }
        socket.send(SpeechHelperFrame.encoded(header: SpeechHelperFrame.header(.append, id: id), samples: samples[...]))
    }

    /// The stream is done with: `finish` closed it at the helper, or the turn was cleared (`tell`).
    func closeStream(_ id: UInt64, tell: Bool) {
        guard streams.removeValue(forKey: id) != nil, tell else { return }
        socket?.send(SpeechHelperFrame(.close, id: id).encoded())
    }

    /// The name by which a model on this connection reads stream `id` (`TranscriptionSession.heldAudio`).
    func held(_ id: UInt64) -> HeldAudio { HeldAudio(holder: ObjectIdentifier(self), name: id) }

    /// The stream `held` names, if it is this connection's, open on the current socket, at `rate`:
    /// a verdict then names it instead of sending the turn's audio.
    func stream(_ held: HeldAudio, rate: Int) -> UInt64? {
        guard held.holder == ObjectIdentifier(self), let stream = streams[held.name], stream.rate == rate,
              let socket, !socket.isClosed, stream.socket == ObjectIdentifier(socket) else { return nil }
        return held.name
    }

    private func streamFailed(_ id: UInt64, _ error: ModelError) {
        streams.removeValue(forKey: id)?.failed(error)
    }

    // MARK: The socket

    private func connected() -> SpeechHelperSocket? {
        guard let generation = status.readyGeneration else {
            socket?.close()
            if socket != nil { lost("the speech helper is down") }
            return nil
        }
        if let socket, socket.generation == generation, !socket.isClosed { return socket }
        if let socket {
            socket.close()
            lost("the speech helper was restarted")
        }
        socket = SpeechHelperSocket.open(status.socketPath, generation: generation, loop: loop, owner: self)
        socket?.send(SpeechHelperFrame(.hello, id: 0, [("version", .int(SpeechHelperContract.version))]).encoded())
        return socket
    }

    func received(_ frame: SpeechHelperFrame) {
        if frame.header["op"]?.string == SpeechHelperContract.Operation.load.rawValue {
            if let busy = frame.header["busy"]?.bool { status.heard(busy: busy) }
            return
        }
        guard let id = frame.header["id"]?.int.flatMap(UInt64.init(exactly:)) else { return }
        if frame.header["op"]?.string == SpeechHelperContract.Operation.hello.rawValue { return greeted(frame) }
        if let code = frame.header["error"]?.string {
            let message = frame.header["message"]?.string ?? code
            let error = ModelError(speechHelper: .refused(SpeechHelperContract.ErrorCode(rawValue: code) ?? .failed), message: "the speech helper: \(message)")
            if streams[id] != nil { return streamFailed(id, error) }
            return finish(id, .failure(error))
        }
        if var entry = pending[id], entry.streaming, frame.header["done"]?.bool != true {
            entry.deadline.cancel()
            entry.deadline = arm(id, entry.timeout)
            pending[id] = entry
            return entry.answer(.success(frame))
        }
        finish(id, .success(frame))
    }

    /// The helper's answer to `hello`: another protocol version closes the socket (the server's
    /// start-up check has said so once, in one line: `SpeechHelperProcess`).
    private func greeted(_ frame: SpeechHelperFrame) {
        let version = frame.header["version"]?.int
        guard version == SpeechHelperContract.version, frame.header["error"] == nil else {
            socket?.close()
            return lost("the speech helper speaks protocol version \(version.map(String.init) ?? "unknown"), this server \(SpeechHelperContract.version)")
        }
        if let busy = frame.header["load"]?["busy"]?.bool { status.heard(busy: busy) }
    }

    /// The connection ended: every request and stream on it fails now.
    func lost(_ why: String) {
        socket = nil
        let failed = pending, orphans = streams
        pending = [:]
        streams = [:]
        let error = ModelError(speechHelper: .unavailable, message: why)
        for (_, entry) in failed {
            entry.deadline.cancel()
            entry.answer(.failure(error))
        }
        for (_, stream) in orphans { stream.failed(error) }
    }

    private func finish(_ id: UInt64, _ result: Result<SpeechHelperFrame, ModelError>) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.deadline.cancel()
        entry.answer(result)
    }

    /// The loop's connection, made on first use.
    static func on(_ loop: EventLoop, _ status: SpeechHelperStatus) -> SpeechHelperConnection {
        loop.local { SpeechHelperConnections() }.connection(loop, status)
    }
}

/// A request to the helper as a `ModelCall`: cancelling it drops the answer, and the helper drops
/// the work if it has not begun (a speak stops after its clause).
final class SpeechHelperCall: ModelCall {
    private let connection: SpeechHelperConnection
    private let id: UInt64?

    init(connection: SpeechHelperConnection, id: UInt64?) {
        self.connection = connection
        self.id = id
    }

    func cancel() {
        if let id { connection.cancel(id) }
    }
}

/// The loop-local table behind `SpeechHelperConnection.on`: one connection per helper a loop talks
/// to (one, in practice).
private final class SpeechHelperConnections {
    private var byPath: [String: SpeechHelperConnection] = [:]

    func connection(_ loop: EventLoop, _ status: SpeechHelperStatus) -> SpeechHelperConnection {
        if let existing = byPath[status.socketPath] { return existing }
        let made = SpeechHelperConnection(loop: loop, status: status)
        byPath[status.socketPath] = made
        return made
    }
}
