/// The close, ping and idle rules of one upgraded WebSocket connection (RFC 6455 sections 5.5 and
/// 7). Pure: events in, actions out, no I/O and no clock of its own. The caller reads the tick,
/// writes the frames, owns the socket and the connection's one timer, and does what each `Action`
/// says.
///
/// How the states follow one another:
///
/// - `open`: data flows both ways. The application (`closeRequested`) or a graceful shutdown
///   (`shutdownRequested`) sends our close and moves to `closeSent`; the peer's close
///   (`closeReceived`) is answered and moves to `closeReceived`; a protocol failure
///   (`protocolFailed`) sends our close and moves to `closeSent`, already finishing.
/// - `closeSent`: our close is out, the peer's is awaited for at most `closeTicks`. When it comes
///   the handshake is complete and the state is `closeReceived`.
/// - `closeReceived`: both closes have crossed; the caller flushes, half-closes and lingers.
/// - `closed`: the socket is gone (`connectionEnded`), whatever the way.
///
/// Everything here is allocation-free but the close reasons.
struct WebSocketCloseMachine {
    /// The connection's deadlines, in timer ticks.
    struct Timing: Equatable {
        /// Quiet ticks before the server checks the peer is still there with a ping (RFC 6455
        /// section 5.5.2: a ping "MAY serve ... as a keepalive").
        var idleTicks: UInt32
        /// Ticks the peer has to show a sign of life after our ping; any bytes will do.
        var pingTicks: UInt32
        /// Ticks the peer has to answer our close with its own (RFC 6455 section 7.1.1 has the
        /// server close the TCP connection, so it does not wait forever).
        var closeTicks: UInt32
    }

    enum State: Equatable {
        /// Neither side has sent a close: data flows both ways.
        case open
        /// Our close is out; the peer's has not come (RFC 6455 section 7.1.3: the closing
        /// handshake is started, the connection is CLOSING). Also the state after a protocol
        /// failure, where the peer's close is no longer awaited (section 7.1.7).
        case closeSent
        /// The peer's close has come and ours is out: the handshake is complete and the caller is
        /// flushing, then half-closing (section 7.1.1).
        case closeReceived
        /// The TCP connection is gone (section 7.1.4: CLOSED).
        case closed
    }

    /// What follows our close frame.
    enum AfterClose: Equatable {
        /// We started the handshake: set the connection's timer to this many ticks and wait for the
        /// peer's close (RFC 6455 section 7.1.2).
        case awaitPeer(ticks: UInt32)
        /// Nothing more is awaited from the peer: flush, then half-close and linger until its EOF
        /// (section 7.1.1).
        case finish
    }

    enum Action: Equatable {
        /// Nothing to do.
        case none
        /// Answer the ping just read with a pong that carries its payload (RFC 6455 section 5.5.3).
        case sendPong
        /// Send an empty ping, then set the connection's timer to this many ticks.
        case sendPing(thenTimeout: UInt32)
        /// Set the connection's one timer to this many ticks.
        case schedule(ticks: UInt32)
        /// Send our close frame, then do what `then` says. A nil code means an empty payload, which
        /// is also what a code-less close is answered with (RFC 6455 section 5.5.1); the reason is
        /// empty whenever the code is nil, since a reason can only follow a code.
        case sendClose(WebSocketCloseCode?, reason: String, then: AfterClose)
        /// Our close is already out: flush, then half-close and linger until the peer's EOF.
        case finish
        /// Tear the TCP connection down now, without a close frame (RFC 6455 section 7.2.2).
        case drop
    }

    private(set) var state = State.open
    /// Our keepalive ping is out and nothing has come back since.
    private(set) var isPingOutstanding = false
    /// `.finish` (or a close followed by it) has been returned: nothing more is awaited from the
    /// peer, and further closes or failures change nothing.
    private(set) var isFinishing = false
    /// Tick of the last byte received.
    private var lastActivity: UInt32
    /// The code of the first close frame sent or received (`.noStatus` for one without a code), or
    /// the reason we dropped the client; nil until then.
    private var closeCode: WebSocketCloseCode?

    /// `now`: the current tick; the bytes of the upgrade request were the last traffic.
    /// The time-outs are not stored: every connection of a loop shares them (`ServingLoop`), and
    /// twelve bytes in each of a million idle connections would be 12 MB.
    init(now: UInt32) {
        lastActivity = now
    }

    /// What the caller sets the connection's timer to on upgrade: the idle deadline.
    static func initialTimer(_ timing: Timing) -> UInt32 { timing.idleTicks }

    /// The code of the first close frame sent or received; what metrics report. 1006 (.abnormal)
    /// if the connection ends without one.
    ///
    /// RFC 6455 section 7.1.5 defines the connection's close code as that of the first close
    /// *received*, 1005 when it had none and 1006 when none came. The server reports the first one
    /// either way, so that a server-initiated close shows the reason the server had (a 1001
    /// shutdown stays 1001 even when the peer answers 1000 or never answers); a frame without a
    /// code counts as 1005, and a connection that ends with no close frame at all as 1006.
    var reportedCode: WebSocketCloseCode { closeCode ?? .abnormal }

    /// Data may still be sent: no close has gone out (RFC 6455 section 5.5.1: after sending a close
    /// frame, no more data frames).
    var isOpen: Bool { state == .open }

    /// Any bytes were read: a sign of life, which answers an outstanding ping whatever the bytes
    /// are (a pong, data, anything). The idle deadline counts from here.
    mutating func trafficReceived(now: UInt32) {
        lastActivity = now
        isPingOutstanding = false
    }

    /// Whether to hand a data frame's payload to the handler. Only while open: once our close is
    /// out, RFC 6455 section 5.5.1 says there is "no guarantee that the endpoint that has already
    /// sent a Close frame will continue to process data", and once the peer's close has come,
    /// nothing after it is data (section 1.4: "a peer discards any further data received").
    mutating func dataReceived() -> Bool {
        state == .open
    }

    /// A ping was read. RFC 6455 section 5.5.2 wants a pong "unless it already received a Close
    /// frame"; the server goes further and stops answering once its own close is out (section
    /// 5.5.1: no guarantee such an endpoint still processes what arrives), so nothing follows a
    /// close frame of ours.
    mutating func pingReceived() -> Action {
        state == .open ? .sendPong : .none
    }

    /// The peer's valid close frame was read; `code` is `.noStatus` when it carried none.
    ///
    /// While open, RFC 6455 section 5.5.1: the endpoint "MUST send a Close frame in response",
    /// and "typically echos the status code it received"; a close with no code is answered with
    /// none (1005 is never sent, section 7.4.1). With both closes crossed, the server closes the
    /// TCP connection first (section 7.1.1: so that it, not the client, holds TIME_WAIT), hence
    /// `.finish` rather than a wait.
    ///
    /// After our own close, this is the answer that completes the handshake (section 7.1.2: "Once
    /// an endpoint has both sent and received a Close control frame, that endpoint SHOULD _Close
    /// the WebSocket Connection_"): `.finish`. After a protocol failure, the peer's close is not
    /// processed (section 7.1.7), and a second close from the peer changes nothing.
    mutating func closeReceived(_ code: WebSocketCloseCode) -> Action {
        switch state {
        case .open:
            record(code)
            state = .closeReceived
            isFinishing = true
            return .sendClose(Self.sendable(code), reason: "", then: .finish)
        case .closeSent:
            guard !isFinishing else { return .none }
            record(code)
            state = .closeReceived
            isFinishing = true
            return .finish
        case .closeReceived, .closed:
            return .none
        }
    }

    /// "Fail the WebSocket Connection" (RFC 6455 section 7.1.7): the peer broke the protocol. The
    /// connection is established, so the server "SHOULD send a Close frame with an appropriate
    /// status code" and then closes the TCP connection without waiting for the peer's answer: it
    /// "MUST NOT continue to attempt to process data (including a responding Close frame)". If our
    /// close is already out, there is nothing more to say: `.finish`.
    mutating func protocolFailed(_ code: WebSocketCloseCode, reason: String) -> Action {
        switch state {
        case .open:
            return startClosing(code, reason: reason, then: .finish)
        case .closeSent where !isFinishing:
            isFinishing = true
            return .finish
        case .closeSent, .closeReceived, .closed:
            return .none
        }
    }

    /// The application or the server starts the closing handshake (RFC 6455 section 7.1.2; section
    /// 7.3: "Servers MAY close the WebSocket connection whenever desired"): our close with `code`
    /// and `reason`, then a bounded wait for the peer's. Once a close has been sent or received
    /// the handshake is already started (section 7.1.3) and a second request does nothing.
    mutating func closeRequested(_ code: WebSocketCloseCode, reason: String, timing: Timing) -> Action {
        guard state == .open else { return .none }
        return startClosing(code, reason: reason, then: .awaitPeer(ticks: timing.closeTicks))
    }

    /// Graceful server shutdown: 1001, "an endpoint is 'going away', such as a server going down"
    /// (RFC 6455 section 7.4.1), by the ordinary closing handshake.
    mutating func shutdownRequested(timing: Timing) -> Action {
        closeRequested(.goingAway, reason: "server shutting down", timing: timing)
    }

    /// The connection's one deadline has passed; what it meant depends on the state.
    ///
    /// Open: if our ping went unanswered, the peer is gone and the connection is dropped without
    /// a close frame (RFC 6455 section 7.2.2), so it reports 1006. If traffic came since the
    /// deadline was set, the deadline moves to `idleTicks` after it. Otherwise the peer has been
    /// quiet for `idleTicks` and is pinged (section 5.5.2). Ticks wrap, so the quiet time is
    /// `now &- lastActivity`.
    ///
    /// Not open: the peer did not answer our close in `closeTicks`, or the flush and linger after
    /// the handshake ran out of time: drop.
    mutating func timerFired(now: UInt32, timing: Timing) -> Action {
        guard state == .open else { return .drop }
        if isPingOutstanding { return .drop }
        let quiet = now &- lastActivity
        if quiet < timing.idleTicks { return .schedule(ticks: timing.idleTicks - quiet) }
        isPingOutstanding = true
        return .sendPing(thenTimeout: timing.pingTicks)
    }

    /// The client does not read and its outbound queue is over the cap. Open: it is told why, with
    /// 1008, "a message that violates its policy" (RFC 6455 section 7.4.1), in a close frame the
    /// connection lets past the cap; a client that reads it again learns why, one that does not
    /// is dropped when the close's deadline passes (section 7.1.7). Already closing: dropped now,
    /// keeping the code it has (section 7.2.2).
    mutating func outboundOverflowed(timing: Timing) -> Action {
        if state == .open {
            return startClosing(.policyViolation, reason: Self.outboundCapReason, then: .awaitPeer(ticks: timing.closeTicks))
        }
        if state != .closed { record(.policyViolation) }
        return .drop
    }

    static let outboundCapReason = "not reading: outbound queue over its cap"

    /// The TCP connection is gone: the peer's EOF or a socket error, or the caller acted on
    /// `.drop` or completed `.finish` (RFC 6455 section 7.1.4). If no close frame crossed,
    /// `reportedCode` is 1006 (section 7.1.5).
    mutating func connectionEnded() {
        state = .closed
        isPingOutstanding = false
    }

    // MARK: Private

    /// Sends our close and records its code: the start of the handshake (section 7.1.2) or the
    /// last word before failing the connection (section 7.1.7).
    private mutating func startClosing(_ code: WebSocketCloseCode, reason: String, then: AfterClose) -> Action {
        let sent = Self.sendable(code)
        record(sent ?? .noStatus)
        state = .closeSent
        if then == .finish { isFinishing = true }
        return .sendClose(sent, reason: sent == nil ? "" : reason, then: then)
    }

    /// First wins (RFC 6455 section 7.1.5 speaks of "the first Close control frame").
    private mutating func record(_ code: WebSocketCloseCode) {
        if closeCode == nil { closeCode = code }
    }

    /// The code to put in a close frame, or nil for an empty payload. 1005, 1006 and 1015 "MUST
    /// NOT be set as a status code in a Close control frame" (RFC 6455 section 7.4.1), and a code
    /// the peer may not use would only make it fail the connection (section 7.4.2), so any code
    /// not valid on the wire goes out as an empty close: the peer then sees 1005, "no status".
    private static func sendable(_ code: WebSocketCloseCode) -> WebSocketCloseCode? {
        code.isValidOnWire ? code : nil
    }
}
