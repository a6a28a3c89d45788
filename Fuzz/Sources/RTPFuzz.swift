@testable import Media

/// A datagram from the media 5-tuple, read as WebRTC's and SIP's receive paths read one: as RTP
/// and as compound RTCP (rtcp-mux carries both; RFC 5761 section 4 tells them apart, but every
/// input is tried both ways here so each parser sees every mutation). Checks that a packet that
/// reads has its ranges inside the datagram, writes back out to bytes that read to the same
/// packet, and that its header extension's elements stay inside the extension; that RTCP that
/// reads writes back (its skipped types left out) to the same packets; and that a refusal can be
/// described.
enum RTPFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        _ = RTPPacket.isRTCP(input)
        rtp(input)
        rtcp(input)
    }

    private static func rtp(_ input: UnsafeRawBufferPointer) {
        do {
            let packet = try RTPPacket(parsing: input)
            precondition(packet.payload.upperBound + packet.paddingLength == input.count, "the payload and padding end the datagram")
            precondition(packet.csrcs.lowerBound == RTPPacket.fixedHeaderLength && packet.csrcCount <= 15, "the CSRC list")
            var csrcs: [UInt32] = []
            for i in 0..<packet.csrcCount { csrcs.append(packet.csrc(i, in: input)) }
            let payload = UnsafeRawBufferPointer(rebasing: input[packet.payload])
            var out: [UInt8] = []
            if let headerExtension = packet.headerExtension {
                precondition(headerExtension.data.upperBound <= packet.payload.lowerBound, "the extension before the payload")
                for element in RTPHeaderExtensionElements(headerExtension, in: input) {
                    precondition(headerExtension.data.lowerBound <= element.data.lowerBound && element.data.upperBound <= headerExtension.data.upperBound, "an element outside its extension")
                }
                let data = UnsafeRawBufferPointer(rebasing: input[headerExtension.data])
                packet.header.write(payload: payload, into: &out, csrcs: csrcs, headerExtension: (headerExtension.profile, data), padding: packet.paddingLength)
            } else {
                packet.header.write(payload: payload, into: &out, csrcs: csrcs, padding: packet.paddingLength)
            }
            precondition((try? RTPPacket(parsing: out)) == packet, "the packet does not write back to itself")
            precondition(out[packet.payload].elementsEqual(payload), "the payload does not write back")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }

    private static func rtcp(_ input: UnsafeRawBufferPointer) {
        do {
            let packets = try RTCPPacket.parseCompound(input)
            precondition(!packets.isEmpty && packets.count <= input.count / 4, "\(packets.count) packets in \(input.count) bytes")
            let written = packets.filter { if case .other = $0 { false } else { true } }
            guard !written.isEmpty else { return }
            var out: [UInt8] = []
            for packet in written { packet.append(to: &out) }
            precondition((try? RTCPPacket.parseCompound(out)) == written, "the RTCP packets do not write back to themselves")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }
}
