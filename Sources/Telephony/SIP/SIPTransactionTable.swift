import Loop
import Server
import SIP
import TLS

/// The transaction user (RFC 3261 section 17's TU): what a loop's transactions hand up and send.
protocol SIPTransactionUser: AnyObject {
    func send(_ message: SIPMessage, to peer: SIPPeer)
    /// A request that began a server transaction (section 17.2.1, 17.2.2), or an ACK its INVITE
    /// transaction passes on; `now` is when its datagram was carried.
    func deliver(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer, now: UInt64)
}

/// One loop's SIP transactions (RFC 3261 section 17), server and client: `SIP`'s four value
/// machines, each with the peer it talks to, its timer on the loop, and, for a request of ours,
/// where its responses go. Messages, the TU's answers and timers go in; what the machines say is
/// carried out here (sent to the peer, handed up, or the transaction ended).
final class SIPTransactionTable {
    /// The four machines of section 17 as one kind.
    enum Machine {
        case serverInvite(SIPServerInviteTransaction)
        case serverOther(SIPServerNonInviteTransaction)
        /// A placed call's INVITE, with the call's Call-ID (for its CANCEL, section 9.1).
        case clientInvite(SIPClientInviteTransaction, callID: String)
        case clientOther(SIPClientNonInviteTransaction)
    }

    /// What a machine is given: to begin, a message from the peer (a request again, or a
    /// response), the TU's response to a server transaction's request, or its timer.
    enum Input {
        case start, message(SIPMessage), answer(SIPMessage), timer
    }

    private struct Slot: Hashable {
        let key: SIPTransactionKey
        let client: Bool
    }

    private struct Transaction {
        var machine: Machine
        let peer: SIPPeer
        /// A client transaction's responses, as its machine passes them up, and nil for none (timer
        /// B or F, or its connection gone). Nil for a server transaction: its requests go to the TU.
        let responses: ((SIPMessage?) -> Void)?
        /// The machine's next deadline, as of its last step.
        var deadline: UInt64?
        var timer: ScheduledTask?
    }

    private let loop: EventLoop
    private unowned let user: any SIPTransactionUser
    /// Server and client transactions apart: a request of ours that comes back to us (a trunk
    /// that routes to Parley) has our own branch, and is a server transaction of its own.
    private var transactions: [Slot: Transaction] = [:]

    init(loop: EventLoop, user: any SIPTransactionUser) {
        self.loop = loop
        self.user = user
    }

    // MARK: Server transactions

    /// Whether `key`'s server transaction is open.
    func serving(_ key: SIPTransactionKey) -> Bool { transactions[Slot(key: key, client: false)] != nil }

    /// A request that matches an open server transaction (section 17.2.3): a retransmission, or
    /// the ACK of a non-2xx final, given to its machine; false when it matches none.
    func received(request: SIPMessage, key: SIPTransactionKey) -> Bool {
        step(.message(request), Slot(key: key, client: false))
    }

    /// A new request's server transaction, begun: an INVITE's, or any other's (which hands the
    /// request up at once, section 17.2.2).
    func begin(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer) {
        let machine: Machine = request.method == "INVITE"
            ? .serverInvite(SIPServerInviteTransaction(request: request, reliable: peer.isReliable))
            : .serverOther(SIPServerNonInviteTransaction(request: request, reliable: peer.isReliable))
        open(machine, Slot(key: key, client: false), peer: peer, responses: nil)
    }

    /// The TU's answer to the request of server transaction `key`.
    func respond(_ response: SIPMessage, key: SIPTransactionKey) {
        _ = step(.answer(response), Slot(key: key, client: false))
    }

    // MARK: Client transactions

    /// `request` (its Via on top, section 8.1.1.7) sent to `peer` in a transaction of its own:
    /// an INVITE (for the call `callID`, every response passed up) or another request (its final
    /// response passed up). False when it has no branch to be keyed by (nothing is sent).
    func send(request: SIPMessage, to peer: SIPPeer, dialing callID: String? = nil, responses: @escaping (SIPMessage?) -> Void) -> Bool {
        guard let key = SIPTransactionKey.client(for: request) else { return false }
        let machine: Machine = if let callID {
            .clientInvite(SIPClientInviteTransaction(request: request, reliable: peer.isReliable), callID: callID)
        } else {
            .clientOther(SIPClientNonInviteTransaction(request: request, reliable: peer.isReliable))
        }
        open(machine, Slot(key: key, client: true), peer: peer, responses: responses)
        return true
    }

    /// A response to a request of ours, given to its transaction (section 17.1.3); false when it
    /// matches none.
    func received(response: SIPMessage, key: SIPTransactionKey) -> Bool {
        step(.message(response), Slot(key: key, client: true))
    }

    /// Whether a request of ours is waiting for its response under `key`.
    func sending(_ key: SIPTransactionKey) -> Bool { transactions[Slot(key: key, client: true)] != nil }

    /// The INVITE of the call `callID` as sent, and its peer, while its transaction lives: what a
    /// CANCEL is made from (section 9.1).
    func invite(of callID: String) -> (request: SIPMessage, peer: SIPPeer)? {
        for transaction in transactions.values {
            guard case .clientInvite(let invite, callID) = transaction.machine, invite.state != .terminated else { continue }
            return (invite.request, transaction.peer)
        }
        return nil
    }

    /// A TCP or TLS connection ended: a request of ours waiting on it will get no response there
    /// (a connect refused, a handshake failed, the peer gone), so its transaction ends now.
    func closed(_ connection: StreamConnection) {
        for (slot, pending) in transactions where slot.client && pending.peer.connection === connection {
            carry([.timeout, .terminated], slot)
        }
    }

    // MARK: The machines

    private func open(_ machine: Machine, _ slot: Slot, peer: SIPPeer, responses: ((SIPMessage?) -> Void)?) {
        transactions[slot] = Transaction(machine: machine, peer: peer, responses: responses)
        _ = step(.start, slot)
    }

    /// `input` to the transaction at `slot`, and what its machine says carried out; false when
    /// there is no such transaction.
    private func step(_ input: Input, _ slot: Slot) -> Bool {
        guard let (actions, deadline) = transactions[slot]?.machine.step(input, now: loop.nanoseconds()) else { return false }
        transactions[slot]?.deadline = deadline
        if case .timer = input { transactions[slot]?.timer = nil }
        carry(actions, slot)
        return true
    }

    private func carry(_ actions: [SIPTransactionAction], _ slot: Slot) {
        guard let transaction = transactions[slot] else { return }
        let now = loop.nanoseconds()
        for action in actions {
            switch action {
            case .send(let message): user.send(message, to: transaction.peer)
            case .deliver(let message):
                if let responses = transaction.responses { responses(message) } else { user.deliver(message, key: slot.key, from: transaction.peer, now: now) }
            case .timeout:
                // A server transaction's: no ACK for a final non-2xx, nothing more to do for a
                // call that was refused. A client's: no response.
                transaction.responses?(nil)
            case .terminated:
                transactions[slot]?.timer?.cancel()
                transactions[slot] = nil
                return
            }
        }
        // The deadline as it is now: handing a request up may have answered it.
        guard var current = transactions[slot] else { return }
        current.timer?.cancel()
        current.timer = current.deadline.map { at in loop.schedule(at: at) { [weak self] in _ = self?.step(.timer, slot) } }
        transactions[slot] = current
    }
}

extension SIPTransactionTable.Machine {
    /// The one place the four machines are told apart: `input` given to this one, its actions
    /// and its next deadline out.
    mutating func step(_ input: SIPTransactionTable.Input, now: UInt64) -> ([SIPTransactionAction], UInt64?) {
        switch self {
        case .serverInvite(var machine):
            defer { self = .serverInvite(machine) }
            return Self.serve(&machine, input, now: now)
        case .serverOther(var machine):
            defer { self = .serverOther(machine) }
            return Self.serve(&machine, input, now: now)
        case .clientInvite(var machine, let callID):
            defer { self = .clientInvite(machine, callID: callID) }
            return Self.ask(&machine, input, now: now)
        case .clientOther(var machine):
            defer { self = .clientOther(machine) }
            return Self.ask(&machine, input, now: now)
        }
    }

    private static func serve(_ machine: inout some SIPServerMachine, _ input: SIPTransactionTable.Input, now: UInt64) -> ([SIPTransactionAction], UInt64?) {
        let actions = switch input {
        case .start: machine.start()
        case .message(let request): machine.receive(request: request, now: now)
        case .answer(let response): machine.respond(response, now: now)
        case .timer: machine.fire(now: now)
        }
        return (actions, machine.nextDeadline)
    }

    /// A client transaction is never answered by the TU: it is the one that asks.
    private static func ask(_ machine: inout some SIPClientMachine, _ input: SIPTransactionTable.Input, now: UInt64) -> ([SIPTransactionAction], UInt64?) {
        let actions = switch input {
        case .start: machine.start(now: now)
        case .message(let response): machine.receive(response: response, now: now)
        case .answer: [SIPTransactionAction]()
        case .timer: machine.fire(now: now)
        }
        return (actions, machine.nextDeadline)
    }
}

/// What the table asks of a server transaction (sections 17.2.1 and 17.2.2 alike).
protocol SIPServerMachine {
    mutating func start() -> [SIPTransactionAction]
    mutating func receive(request: SIPMessage, now: UInt64) -> [SIPTransactionAction]
    mutating func respond(_ response: SIPMessage, now: UInt64) -> [SIPTransactionAction]
    mutating func fire(now: UInt64) -> [SIPTransactionAction]
    var nextDeadline: UInt64? { get }
}

/// What the table asks of a client transaction (sections 17.1.1 and 17.1.2 alike).
protocol SIPClientMachine {
    mutating func start(now: UInt64) -> [SIPTransactionAction]
    mutating func receive(response: SIPMessage, now: UInt64) -> [SIPTransactionAction]
    mutating func fire(now: UInt64) -> [SIPTransactionAction]
    var nextDeadline: UInt64? { get }
}

extension SIPServerInviteTransaction: SIPServerMachine {}
extension SIPServerNonInviteTransaction: SIPServerMachine {}
extension SIPClientInviteTransaction: SIPClientMachine {}
extension SIPClientNonInviteTransaction: SIPClientMachine {}

extension SIPEndpoint.Settings {
    /// `request` with a Via of ours on top, its branch a transaction's own (section 8.1.1.7).
    func stamped(_ request: SIPMessage, over transport: String) -> SIPMessage {
        var request = request
        request.headers.insert(SIPHeader("Via", via(over: transport, branch: SIPVia.branch(random: OpenSSL.randomBytes(8)))), at: 0)
        return request
    }
}
