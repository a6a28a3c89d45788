import Loop

/// WebSocket on a connection (RFC 6455), from the upgrade to the close: frames in through
/// `WebSocketFrameReader`, messages to the endpoint's handler, frames out. The close handshake,
/// pings and idleness are decided by `WebSocketCloseMachine`, a value; this class carries out its
/// actions on the transport.
final class WebSocketProtocol {
    /// The transport this protocol speaks on; it owns this value, so it outlives it.
    // Fields in the order that packs them (Swift keeps the order written): an idle connection is
    // counted in bytes. The subprotocol is not kept: the handler's factory is given it.
    unowned(unsafe) let connection: Connection
    private var handler: (any WebSocketHandler)?
    /// A fragmented message being put together.
    private var message = ByteBuffer()
    private var reader: WebSocketFrameReader
    private var machine: WebSocketCloseMachine
    /// Index into the per-endpoint metrics (a byte: it ends the object in the close machine's
    /// padding; a server has a handful of endpoints).
    private let endpointIndex: UInt8

    var endpoint: Int { Int(endpointIndex) }

    init(connection: Connection, endpoint: Router.WebSocketEndpoint, admission: WebSocketAdmission) {
        self.connection = connection
        endpointIndex = UInt8(endpoint.metricsIndex)
        let serverLimit = connection.serving.context.configuration.maxMessageBytes
        reader = WebSocketFrameReader(maxMessageBytes: admission.maxMessageBytes.map { max($0, serverLimit) } ?? serverLimit)
        machine = WebSocketCloseMachine(now: connection.loop.now)
        handler = admission.handler
    }

    private var serving: ServingLoop { connection.serving }

    var isOpen: Bool { connection.isOpen && machine.isOpen }
    /// The fragmented message's buffer (what the handler holds is in the connection's account).
    var heapBytes: Int { message.allocatedBytes }

    /// Adopted: counted under its endpoint, the idle timer set, the handler told.
    func opened() {
        serving.metrics.open[0].add(-1)
        serving.metrics.open[endpoint].add(1)
        connection.setDeadline(afterTicks: WebSocketCloseMachine.initialTimer(serving.webSocketTiming))
        handler?.webSocketDidOpen(WebSocket(connection: connection))
    }

    // MARK: Reading

    /// Reads frames from `bytes`; returns how many were used (the rest is an unfinished header).
    func process(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while connection.isOpen {
            let (consumed, event) = reader.read(UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            switch event {
            case .needMore:
                return offset
            case .data(let kind, let chunk, let first, let last):
                deliver(kind, UnsafeRawBufferPointer(chunk), first: first, last: last)
            case .ping(let payload):
                if machine.pingReceived() == .sendPong { writeFrame(.pong, UnsafeRawBufferPointer(payload)) }
            case .pong:
                break  // any traffic already counts as a sign of life
            case .close(let code, _):
                perform(machine.closeReceived(code))
                return bytes.count
            case .failure(let code, let reason):
                // "Fail the WebSocket Connection" (RFC 6455 section 7.1.7): say why, then stop.
                perform(machine.protocolFailed(code, reason: reason))
                return bytes.count
            }
            if offset == bytes.count && !reader.isInsideFrame { return offset }
        }
        return bytes.count
    }

    private func deliver(_ kind: WebSocketMessageKind, _ chunk: UnsafeRawBufferPointer, first: Bool, last: Bool) {
        // After our close frame, the RFC lets us drop whatever data still arrives.
        guard machine.dataReceived() else { return }
        if first && last {
            serving.metrics.messagesIn.add(1)
            handler?.webSocket(WebSocket(connection: connection), didReceive: chunk, kind: kind)
            return
        }
        message.append(chunk)
        guard last else { return }
        serving.metrics.messagesIn.add(1)
        handler?.webSocket(WebSocket(connection: connection), didReceive: UnsafeRawBufferPointer(message.readable), kind: kind)
        message.release()
    }

    func trafficReceived() {
        machine.trafficReceived(now: connection.loop.now)
    }

    // MARK: Writing

    /// One data message, unfragmented; nothing once the close has begun.
    func send(_ payload: UnsafeRawBufferPointer, opcode: WebSocketOpcode) {
        guard isOpen else { return }
        serving.metrics.messagesOut.add(1)
        writeFrame(opcode, payload)
    }

    private func writeFrame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(byteCount: WebSocketFrameWriter.maxHeaderBytes, alignment: 1) { header in
            let n = WebSocketFrameWriter.header(opcode, payloadLength: payload.count, into: header)
            connection.write(UnsafeRawBufferPointer(rebasing: header[..<n]), payload)
        }
    }

    func setHandlerBytes(_ bytes: Int) {
        connection.handlerBytes = Int32(clamping: bytes)
        connection.account()
    }

    // MARK: Closing and time

    /// Server-initiated close: send ours, wait (bounded) for theirs.
    func close(_ code: WebSocketCloseCode, reason: String) {
        guard connection.isOpen else { return }
        perform(machine.closeRequested(code, reason: reason, timing: serving.webSocketTiming))
    }

    func deadlinePassed() {
        let (wasOpen, pinged) = (machine.isOpen, machine.isPingOutstanding)
        let action = machine.timerFired(now: connection.loop.now, timing: serving.webSocketTiming)
        if action == .drop { serving.metrics.dropped[(wasOpen && pinged ? DropReason.pingTimeout : .closeTimeout).rawValue].add(1) }
        perform(action)
    }

    /// Draining: 1001, unless the handler will close the socket itself (and `force` is false).
    func drain(force: Bool) {
        if !force, let handler, handler.webSocketDrain(WebSocket(connection: connection)) { return }
        perform(machine.shutdownRequested(timing: serving.webSocketTiming))
    }

    /// A client that does not read: told so with 1008, or dropped, as the machine says.
    func outboundOverflowed() {
        perform(machine.outboundOverflowed(timing: serving.webSocketTiming))
    }

    /// Carries out what the close machine decided.
    private func perform(_ action: WebSocketCloseMachine.Action) {
        switch action {
        case .none, .sendPong:
            break  // a pong is written where the ping's payload is at hand
        case .sendPing(let timeout):
            writeFrame(.ping, UnsafeRawBufferPointer(start: nil, count: 0))
            connection.setDeadline(afterTicks: timeout)
        case .schedule(let ticks):
            connection.setDeadline(afterTicks: ticks)
        case .sendClose(let code, let reason, let then):
            let payload = code.map { WebSocketFrameWriter.closePayload($0, reason: reason) } ?? []
            payload.withUnsafeBytes { writeFrame(.close, $0) }
            switch then {
            case .awaitPeer(let ticks): connection.setDeadline(afterTicks: ticks)
            case .finish: connection.finish(discardingInput: false)
            }
        case .finish:
            connection.finish(discardingInput: false)
        case .drop:
            connection.close()
        }
    }

    func stopReading() {
        message.release()
    }

    /// The connection is ending; returns the code to count it under.
    func ended() -> WebSocketCloseCode {
        message.release()
        machine.connectionEnded()
        return machine.reportedCode
    }

    /// The connection has been given back: the handler hears of it, once.
    func closed() {
        guard let handler else { return }
        self.handler = nil
        handler.webSocketDidClose(WebSocket(connection: connection), code: machine.reportedCode)
    }
}
