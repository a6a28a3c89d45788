/// Why libsrtp2 refused a packet: the call drops it and counts it by kind, and never ends for it
/// (a replayed or forged packet is the sender's problem, or an attacker's). Or why a call's
/// context could not be made (`library`, `unavailable`): that call ends.
package enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Already seen, or older than the replay window (RFC 3711 section 3.3.2).
    case replay
    /// The authentication tag does not match (RFC 3711 section 3.4; RFC 7714 section 9.3 for GCM).
    case authentication
    /// Too short, too long, or a header whose lengths do not add up.
    case malformed
    /// The keys cannot make a session (wrong lengths), or libsrtp2 failed otherwise: its status code.
    case library(Int32)
    /// libsrtp2 cannot be opened (Debian's libsrtp2-1 not installed, or without a function Parley
    /// calls): dlopen's reason.
    case unavailable(String)

    package var description: String {
        switch self {
        case .replay: "SRTP replay"
        case .authentication: "SRTP authentication failed"
        case .malformed: "malformed SRTP packet"
        case .library(let status): "libsrtp2 failed with status \(status)"
        case .unavailable(let reason): "libsrtp2 cannot be loaded: \(reason)"
        }
    }
}
