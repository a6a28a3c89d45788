import Testing
import TestSupport
@testable import WebRTC

/// Two SCTP associations joined by an in-memory network on a virtual clock: packets take a
/// latency, and a seeded generator may drop some and delay others (so they arrive reordered).
struct SCTPLink {
    static let millisecond: UInt64 = 1_000_000

    var client: SCTPAssociation
    var server: SCTPAssociation
    var now: UInt64 = 0
    var random: SeededRandom
    var lossRate = 0.0
    var latency: UInt64 = 5 * millisecond
    var jitter: UInt64 = 0
    /// Drops a packet when it returns true: (to the server?, the packet).
    var drop: ((Bool, SCTPPacket) -> Bool)?
    private var inFlight: [(at: UInt64, toServer: Bool, bytes: [UInt8])] = []
    private(set) var clientActions: [SCTPAssociation.Action] = []
    private(set) var serverActions: [SCTPAssociation.Action] = []
    private(set) var sentToServer: [(at: UInt64, packet: SCTPPacket)] = []

    static func configuration(_ change: (inout SCTPAssociation.Configuration) -> Void = { _ in }) -> SCTPAssociation.Configuration {
        var configuration = SCTPAssociation.Configuration()
        configuration.heartbeatInterval = nil
        change(&configuration)
        return configuration
    }

    init(seed: UInt64 = 1, client: SCTPAssociation.Configuration = configuration(), server: SCTPAssociation.Configuration = configuration()) {
        self.client = SCTPAssociation(configuration: client, localTag: 0x0C11_E417, initialTSN: 0xFFFF_FFF0, cookieSecret: Array(repeating: 1, count: 32))
        self.server = SCTPAssociation(configuration: server, localTag: 0x5E5E_5E5E, initialTSN: 1000, cookieSecret: Array(repeating: 2, count: 32))
        random = SeededRandom(seed: seed)
    }

    var clientDeliveries: [[UInt8]] { clientActions.compactMap { if case .deliver(_, _, let m) = $0 { m } else { nil } } }
    var serverDeliveries: [[UInt8]] { serverActions.compactMap { if case .deliver(_, _, let m) = $0 { m } else { nil } } }

    mutating func absorb(_ actions: [SCTPAssociation.Action], fromClient: Bool) {
        for action in actions {
            guard case .send(let bytes) = action else {
                if fromClient { clientActions.append(action) } else { serverActions.append(action) }
                continue
            }
            guard let packet = try? SCTPPacket(parsing: bytes) else {
                Issue.record("an association sent bytes that do not parse")
                continue
            }
            if fromClient { sentToServer.append((now, packet)) }
            if drop?(fromClient, packet) == true { continue }
            if lossRate > 0, Double.random(in: 0..<1, using: &random) < lossRate { continue }
            let extra = jitter > 0 ? UInt64.random(in: 0...jitter, using: &random) : 0
            inFlight.append((now + latency + extra, fromClient, bytes))
        }
    }

    mutating func connect() {
        let actions = client.connect(now: now)
        absorb(actions, fromClient: true)
        run(for: 200 * Self.millisecond)
    }

    mutating func sendFromClient(_ message: [UInt8], stream: UInt16 = 0, ordered: Bool = true) throws {
        let actions = try client.send(message, stream: stream, ppid: 53, ordered: ordered, now: now)
        absorb(actions, fromClient: true)
    }

    mutating func sendFromServer(_ message: [UInt8], stream: UInt16 = 1) throws {
        let actions = try server.send(message, stream: stream, ppid: 51, now: now)
        absorb(actions, fromClient: false)
    }

    /// Advances the clock a millisecond at a time, delivering packets and running timers.
    mutating func run(for duration: UInt64) {
        let end = now + duration
        while now < end {
            now += Self.millisecond
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            for packet in due {
                if packet.toServer {
                    let actions = server.receive(packet.bytes, now: now)
                    absorb(actions, fromClient: false)
                } else {
                    let actions = client.receive(packet.bytes, now: now)
                    absorb(actions, fromClient: true)
                }
            }
            if let deadline = client.nextDeadline, deadline <= now {
                let actions = client.tick(now: now)
                absorb(actions, fromClient: true)
            }
            if let deadline = server.nextDeadline, deadline <= now {
                let actions = server.tick(now: now)
                absorb(actions, fromClient: false)
            }
        }
    }
}
