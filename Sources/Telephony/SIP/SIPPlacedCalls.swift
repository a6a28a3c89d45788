import Session
import Synchronization

/// The calls this process placed over UDP, by SIP Call-ID, with the agent (and so the loop) that
/// holds each. Every loop binds the SIP port (SO_REUSEPORT) and the kernel hands a sender's
/// datagrams to one loop by a hash of the addresses: all of a trunk's come to one loop, whichever
/// loop placed the call. What comes for a call held elsewhere is handed to its loop here.
final class SIPPlacedCalls: Sendable {
    static let shared = SIPPlacedCalls()
    private let homes = Mutex<[String: Handoff<SIPUserAgent>]>([:])

    func add(_ callID: String, on agent: SIPUserAgent) { homes.withLock { $0[callID] = Handoff(agent) } }
    func remove(_ callID: String) { _ = homes.withLock { $0.removeValue(forKey: callID) } }
    func home(of callID: String) -> Handoff<SIPUserAgent>? { homes.withLock { $0[callID] } }
}
