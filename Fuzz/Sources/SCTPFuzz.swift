@testable import WebRTC

/// An SCTP packet as DTLS hands one over (the data channel's transport, RFC 8261). The input is
/// parsed as it is and, when its checksum is wrong, again with it made right (otherwise nearly
/// every mutation would stop at the CRC). What parses must write back to bytes that parse to the
/// same packet. The packet then goes to a passive association that has seen nothing (as the
/// first packet from a browser would) and, with its tag made right, to one established with an
/// open "oai-events" channel; neither may trap, and what comes out must stay within bounds.
/// The input is also read as a DCEP message (RFC 8832).
enum SCTPFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        parse(bytes)
        controlMessage(bytes)
        guard bytes.count >= SCTPPacket.headerBytes else { return }
        var repaired = bytes
        SCTPPacket.setChecksum(&repaired)
        if repaired != bytes { parse(repaired) }

        let configuration = configuration()
        var passive = DataChannels(association: SCTPAssociation(configuration: configuration, localTag: 0x5E5E_5E5E, initialTSN: 1000, cookieSecret: [UInt8](repeating: 2, count: 32)), role: .server)
        feed(repaired, to: &passive)

        var established = establishedParley()
        var tagged = repaired
        let tag = established.association.localTag
        for i in 0..<4 { tagged[4 + i] = UInt8(truncatingIfNeeded: tag >> (24 - 8 * i)) }
        SCTPPacket.setChecksum(&tagged)
        feed(tagged, to: &established)
    }

    private static func parse(_ bytes: [UInt8]) {
        do {
            let packet = try SCTPPacket(parsing: bytes)
            precondition(!packet.chunks.isEmpty, "a packet without chunks parsed")
            let again = packet.encoded()
            precondition((try? SCTPPacket(parsing: again)) == packet, "the packet does not write back to itself")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }

    private static func controlMessage(_ bytes: [UInt8]) {
        do {
            let message = try DataChannelControlMessage(parsing: bytes)
            precondition((try? DataChannelControlMessage(parsing: message.encoded())) == message, "the DCEP message does not write back to itself")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }

    private static func configuration() -> SCTPAssociation.Configuration {
        var configuration = SCTPAssociation.Configuration()
        configuration.heartbeatInterval = 1_000_000_000
        return configuration
    }

    /// Parley with a browser's association brought up and its "oai-events" channel opened.
    private static func establishedParley() -> DataChannels {
        var browser = DataChannels(association: SCTPAssociation(configuration: configuration(), localTag: 0x0C11_E417, initialTSN: 7, cookieSecret: [UInt8](repeating: 1, count: 32)), role: .client)
        var parley = DataChannels(association: SCTPAssociation(configuration: configuration(), localTag: 0x5E5E_5E5E, initialTSN: 1000, cookieSecret: [UInt8](repeating: 2, count: 32)), role: .server)
        var toParley = packets(browser.connect(now: 0))
        var toBrowser: [[UInt8]] = []
        var opened = false
        for step in 1...12 {
            let now = UInt64(step) * 1_000_000
            for bytes in toParley { toBrowser += packets(parley.receive(bytes, now: now)) }
            toParley = []
            for bytes in toBrowser { toParley += packets(browser.receive(bytes, now: now)) }
            toBrowser = []
            if !opened && browser.association.isEstablished, let (_, actions) = try? browser.open(label: "oai-events", now: now) {
                opened = true
                toParley += packets(actions)
            }
        }
        precondition(parley.association.isEstablished && parley.channels.count == 1, "the scripted handshake did not open the channel")
        return parley
    }

    private static func packets(_ actions: [DataChannels.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(let bytes) = $0 { bytes } else { nil } }
    }

    /// Feeds the packet, then runs the timers past every deadline, checking what comes out.
    private static func feed(_ packet: [UInt8], to channels: inout DataChannels) {
        let start: UInt64 = 20_000_000
        check(channels.receive(packet, now: start), input: packet.count, channels)
        for later: UInt64 in [200_000_000, 1_500_000_000, 70_000_000_000, 600_000_000_000] {
            check(channels.tick(now: start + later), input: packet.count, channels)
        }
    }

    private static func check(_ actions: [DataChannels.Action], input: Int, _ channels: DataChannels) {
        let association = channels.association
        precondition(actions.count <= input / 4 + 32, "\(actions.count) actions from a \(input)-byte packet")
        for case .send(let bytes) in actions {
            precondition(bytes.count <= association.configuration.maxPacketBytes, "a \(bytes.count)-byte packet sent")
            precondition((try? SCTPPacket(parsing: bytes)) != nil, "a packet sent that does not parse")
        }
        precondition(association.receiver.bufferedBytes >= 0, "negative receive accounting")
        precondition(association.receiver.bufferedBytes <= association.configuration.receiveWindowBytes + SCTPPacket.maxBytes, "the receive buffer over its bound")
        precondition(association.sender.bufferedBytes <= association.configuration.sendBufferBytes, "the send buffer over its bound")
        precondition(channels.channels.count <= DataChannels.maxChannels, "too many channels")
    }
}
