import Server

/// How a session ended, whatever carried it: the driver, its report, trace and log read this, and
/// each carrier says it in its own way (a WebSocket close code, a BYE, a hang-up of a WebRTC call,
/// a Twilio stream's end). `code` is RFC 6455 section 7.4's number for it, which the session report
/// and trace have always carried for every carrier (a SIP call's BYE is 1000).
package enum SessionEnding: Sendable, Equatable {
    /// Either side ended it as it should: a close 1000, a BYE, a hang-up, a stream's `stop`.
    case ended
    /// The client went (a WebSocket's 1001, a call whose media stopped), or the server drained.
    case wentAway
    /// The connection dropped without a close.
    case dropped
    /// The server is restarting: the client may resume elsewhere.
    case serverRestart
    /// A policy ended it: a limit passed, a resume refused, a session of no use (no transcriber).
    case policy
    /// The client sent what the session cannot take (a frame kind, a codec).
    case unsupportedInput
    /// The server could not carry the session (a WebRTC call whose transport could not be made).
    case serverFailed
    /// A WebSocket client's close of another meaning (a protocol error, bad UTF-8, a message too
    /// big, an application's own code), kept as its code.
    case closed(code: UInt16)

    package var code: UInt16 {
        switch self {
        case .ended: 1000
        case .wentAway: 1001
        case .unsupportedInput: 1003
        case .dropped: 1006
        case .policy: 1008
        case .serverFailed: 1011
        case .serverRestart: 1012
        case .closed(let code): code
        }
    }

    /// How the session ended, in its report.
    var reportReason: String {
        switch self {
        case .ended: "closed by the client"
        case .wentAway: "going away (the client left, or the server drained)"
        case .dropped: "the connection dropped"
        case .policy: "closed for a policy (a limit or a refused resume)"
        case .serverRestart: "the server restarted (the client may resume)"
        case .unsupportedInput, .serverFailed: "closed with \(code)"
        case .closed(let code): code == 1005 ? "closed without a status" : "closed with \(code)"
        }
    }
}

/// The WebSocket carrier's dialect: each ending as a close code, and back.
extension SessionEnding {
    package init(_ code: WebSocketCloseCode) {
        self = switch code {
        case .normal: .ended
        case .goingAway: .wentAway
        case .unsupportedData: .unsupportedInput
        case .abnormal: .dropped
        case .policyViolation: .policy
        case .serviceRestart: .serverRestart
        case .internalError: .serverFailed
        default: .closed(code: code.rawValue)
        }
    }
}

extension WebSocketCloseCode {
    package init(_ ending: SessionEnding) {
        self.init(rawValue: ending.code)
    }
}
