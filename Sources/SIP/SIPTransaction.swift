/// What the four transaction machines (RFC 3261 section 17) share: their timer values, what they
/// ask for, and how a message finds its transaction. Each machine is a value: messages and the
/// clock (`now`, nanoseconds on any monotonic scale) in, actions out; the caller sends, hands
/// messages to the transaction user, and calls `fire(now:)` at `nextDeadline`.
package struct SIPTimers: Sendable, Equatable {
    /// The round-trip estimate (section 17.1.1.1): 500 ms.
    package var t1: UInt64
    /// The longest retransmission interval for non-INVITE requests and INVITE responses: 4 s.
    package var t2: UInt64
    /// How long a message may stay in the network: 5 s.
    package var t4: UInt64

    package init(t1: UInt64 = 500_000_000, t2: UInt64 = 4_000_000_000, t4: UInt64 = 5_000_000_000) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
    }

    /// Timers B, F, H and J over unreliable transports: 64*T1.
    package var transactionTimeout: UInt64 { t1 &* 64 }
    /// Timer D's lower bound over unreliable transports: 32 s, whatever T1 is (section 17.1.1.2).
    static let timerD: UInt64 = 32_000_000_000
}

/// What a transaction asks its caller to do.
package enum SIPTransactionAction: Sendable, Equatable {
    /// Send this message to the peer, over the transaction's transport.
    case send(SIPMessage)
    /// Hand this message to the transaction user: a new request, or a response to ours.
    case deliver(SIPMessage)
    /// Timer B, F or H fired: no answer (a client's request failed, as with a 408, section
    /// 8.1.3.1) or, for a server's INVITE, no ACK for its final response.
    case timeout
    /// The transaction is over: forget it.
    case terminated
}

/// The identity of a transaction: the top Via's branch, and the method (ACK counted as INVITE);
/// for a server's transaction the top Via's sent-by too (section 17.2.3).
package struct SIPTransactionKey: Sendable, Hashable {
    package var branch: String
    package var sentBy: String
    package var method: String

    package init(branch: String, sentBy: String = "", method: String) {
        self.branch = branch
        self.sentBy = sentBy
        self.method = method
    }

    /// The server transaction `request` belongs to (section 17.2.3): an ACK to a non-2xx final
    /// response matches its INVITE's. Nil when the top Via has no RFC 3261 branch (RFC 2543's
    /// matching is not supported: such a request is answered 400 statelessly).
    package static func server(for request: SIPMessage) -> SIPTransactionKey? {
        guard let method = request.method, let via = try? request.topVia(), via.hasTransactionBranch, let branch = via.branch else { return nil }
        return SIPTransactionKey(branch: branch, sentBy: sentBy(via), method: method == "ACK" ? "INVITE" : method)
    }

    /// The INVITE server transaction a CANCEL is for (section 9.2): the same key with INVITE.
    package static func invite(cancelledBy cancel: SIPMessage) -> SIPTransactionKey? {
        guard cancel.method == "CANCEL", var key = server(for: cancel) else { return nil }
        key.method = "INVITE"
        return key
    }

    /// The client transaction a response belongs to (section 17.1.3), or the key of a request we
    /// send: the top Via's branch and CSeq's method.
    package static func client(for message: SIPMessage) -> SIPTransactionKey? {
        guard let via = try? message.topVia(), let branch = via.branch, let cseq = try? message.cseq() else { return nil }
        return SIPTransactionKey(branch: branch, method: cseq.method == "ACK" ? "INVITE" : cseq.method)
    }

    private static func sentBy(_ via: SIPVia) -> String {
        via.host.lowercased() + ":" + (via.port.map(String.init) ?? "")
    }
}

extension SIPVia {
    /// A fresh branch: the magic cookie and `random` in hex (section 8.1.1.7 asks it be unique in
    /// space and time; the caller supplies the randomness, OpenSSL's in Parley).
    package static func branch(random: [UInt8]) -> String {
        magicCookie + random.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// A repeating timer: when it next fires and the interval it was last set with.
struct SIPRetransmitTimer: Sendable, Equatable {
    var at: UInt64
    var interval: UInt64
}
