import Loop
import Logging
import Media
import Session
import SIP
import TLS

/// Parley's registrations with the trunks that want one (`register_seconds` in the trunks file),
/// carried out on one loop (the first's: one registration per process): each trunk's
/// `SIPRegistration` sent over its transport (UDP, or its TCP or TLS connection), refreshed on the
/// loop's timers, logged and counted as it goes; removed as the server stops.
final class SIPTrunkRegistrar {
    private unowned let agent: SIPUserAgent
    private var entries: [Entry]

    private struct Entry {
        let trunk: SIPOutboundTrunk
        var machine: SIPRegistration
        var timer: ScheduledTask?
    }

    init(agent: SIPUserAgent, trunks: [SIPOutboundTrunk]) {
        self.agent = agent
        let settings = agent.settings
        entries = trunks.compactMap { trunk in
            guard let seconds = trunk.registerSeconds else { return nil }
            // The address of record is the trunk's account (its username, else the caller id);
            // the contact carries the same user, so a call routed to it names the number.
            let user = trunk.credentials?.username ?? trunk.caller
            let transport = trunk.transport == .udp ? "" : ";transport=\(trunk.transport.rawValue.lowercased())"
            let registrar = SIPURI("sip:\(trunk.host):\(trunk.port)\(transport)") ?? SIPURI(host: trunk.host, port: trunk.port)
            let contact = settings.contact(over: trunk.transport.rawValue, user: user)
            let machine = SIPRegistration(registrar: registrar, addressOfRecord: SIPURI(scheme: .sip, user: user, host: trunk.host), contact: contact,
                                          callID: SIPUserAgent.tag() + "@parley", localTag: SIPUserAgent.tag(), credentials: trunk.credentials, seconds: seconds)
            return Entry(trunk: trunk, machine: machine)
        }
    }

    var isEmpty: Bool { entries.isEmpty }

    func start() {
        let now = agent.loop.nanoseconds()
        for index in entries.indices { carry(index, entries[index].machine.start(now: now)) }
    }

    /// The server stops: each registration removed (Expires 0), what the registrar says unawaited.
    func stopping() {
        for index in entries.indices {
            entries[index].timer?.cancel()
            carry(index, entries[index].machine.unregister())
        }
    }

    private func carry(_ index: Int, _ actions: [SIPRegistration.Action]) {
        let trunk = entries[index].trunk
        for action in actions {
            switch action {
            case .send(let register):
                guard let peer = agent.trunks.peer(for: trunk) else {
                    carry(index, entries[index].machine.received(nil, now: agent.loop.nanoseconds()))
                    continue
                }
                agent.send(request: register, to: peer) { [weak self] response in
                    guard let self else { return }
                    carry(index, entries[index].machine.received(response, now: agent.loop.nanoseconds()))
                }
            case .registered(let seconds):
                agent.metrics.registrations.add(1, .registered)
                sessionLog.info("registered with trunk", metadata: ["trunk": "\(trunk.name)", "seconds": "\(seconds)"])
            case .failed(let status, let retry):
                agent.metrics.registrations.add(1, .failed)
                sessionLog.warning("registration with trunk failed", metadata: ["trunk": "\(trunk.name)", "status": "\(status.map(String.init) ?? "no response")",
                                                                                "retry_seconds": "\(retry)"])
            case .unregistered:
                sessionLog.info("unregistered from trunk", metadata: ["trunk": "\(trunk.name)"])
            }
        }
        entries[index].timer?.cancel()
        entries[index].timer = entries[index].machine.nextDeadline.map { at in
            agent.loop.schedule(at: at) { [weak self] in
                guard let self else { return }
                carry(index, entries[index].machine.fire(now: agent.loop.nanoseconds()))
            }
        }
    }
}
