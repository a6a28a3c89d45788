import Testing
@testable import TLS
@testable import WebRTC

/// SRTP and SRTCP through libsrtp2, as a call uses them: the server's context protects, the
/// browser's (a client context from the same exported keys) unprotects, and the other way round;
/// replays, forgeries and garbage are refused with their kind, never a crash.
@Suite struct SRTPContextTests {
    /// Keys as a DTLS handshake exports them, and both ends' contexts.
    static func contexts(_ profile: SRTPProtectionProfile) throws -> (server: SRTPContext, client: SRTPContext) {
        let length = 2 * (profile.masterKeyLength + profile.masterSaltLength)
        let exported = (0..<length).map { _ in UInt8.random(in: 0...255) }
        let keys = try #require(SRTPKeyingMaterial(profile: profile, exported: exported))
        return (try SRTPContext(keys: keys, role: .server), try SRTPContext(keys: keys, role: .client))
    }

    /// An Opus-shaped RTP packet: version 2, payload type 111, a 12-byte header and `payload`.
    static func rtp(sequence: UInt16, ssrc: UInt32 = 0x1234_5678, payload: [UInt8] = Array(0..<40)) -> [UInt8] {
        let timestamp = UInt32(sequence) &* 960
        return [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: timestamp >> $0) }
            + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) }
            + payload
    }

    /// A receiver report (RFC 3550 section 6.4.2) with one report block.
    static func rtcp(ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
        [0x81, 201, 0, 7] + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) } + [UInt8](repeating: 0x5A, count: 24)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func whatOneSideProtectsTheOtherUnprotects(profile: SRTPProtectionProfile) throws {
        let (server, client) = try Self.contexts(profile)
        #expect(server.rtpTrailerLength == (profile == .aeadAes128Gcm ? 16 : 10))
        #expect(server.rtcpTrailerLength == server.rtpTrailerLength + 4)
        for sequence: UInt16 in [1, 2, 3, 65_535] {
            let plain = Self.rtp(sequence: sequence)
            var packet = plain
            packet.reserveCapacity(plain.count + server.rtpTrailerLength)
            try server.protect(rtp: &packet)
            #expect(packet.count == plain.count + server.rtpTrailerLength)
            #expect(Array(packet.prefix(12)) == Array(plain.prefix(12)) && packet[12..<plain.count] != plain[12...])
            try client.unprotect(rtp: &packet)
            #expect(packet == plain)

            var back = plain
            try client.protect(rtp: &back)
            try server.unprotect(rtp: &back)
            #expect(back == plain)
        }
        let report = Self.rtcp()
        var packet = report
        try server.protectRTCP(&packet)
        #expect(packet.count == report.count + server.rtcpTrailerLength)
        try client.unprotectRTCP(&packet)
        #expect(packet == report)
        var back = report
        try client.protectRTCP(&back)
        try server.unprotectRTCP(&back)
        #expect(back == report)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func aReplayedPacketIsRefusedAsReplay(profile: SRTPProtectionProfile) throws {
        let (server, client) = try Self.contexts(profile)
        var packet = Self.rtp(sequence: 7)
        try server.protect(rtp: &packet)
        var first = packet
        try client.unprotect(rtp: &first)
        var again = packet
        #expect(throws: SRTPError.replay) { try client.unprotect(rtp: &again) }
        #expect(again == packet)

        var report = Self.rtcp()
        try server.protectRTCP(&report)
        var once = report
        try client.unprotectRTCP(&once)
        #expect(throws: SRTPError.replay) { try client.unprotectRTCP(&report) }
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func aFlippedBitIsRefusedAsAuthentication(profile: SRTPProtectionProfile) throws {
        let (server, client) = try Self.contexts(profile)
        var packet = Self.rtp(sequence: 9)
        try server.protect(rtp: &packet)
        for index in [1, 13, packet.count - 1] {
            var forged = packet
            forged[index] ^= 0x01
            #expect(throws: SRTPError.authentication) { try client.unprotect(rtp: &forged) }
        }
        // The genuine packet still passes: a forgery does not advance the replay window.
        try client.unprotect(rtp: &packet)

        var report = Self.rtcp()
        try server.protectRTCP(&report)
        report[10] ^= 0x80
        #expect(throws: SRTPError.authentication) { try client.unprotectRTCP(&report) }
    }

    /// What the server sends with its own inbound keys does not authenticate: the roles pick the
    /// keys, and a context never accepts its own packets (a reflection).
    @Test func eachDirectionHasItsOwnKey() throws {
        let (server, _) = try Self.contexts(.aes128CmHmacSha1_80)
        var packet = Self.rtp(sequence: 1)
        try server.protect(rtp: &packet)
        #expect(throws: SRTPError.authentication) { try server.unprotect(rtp: &packet) }
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func garbageIsRefusedWithATypedErrorNeverACrash(profile: SRTPProtectionProfile) throws {
        let (server, client) = try Self.contexts(profile)
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            var garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length > 0 && length % 2 == 0 { garbage[0] = 0x80 | (garbage[0] & 0x3F) } // a version-2 header, half the time
            var rtcp = garbage
            #expect(throws: SRTPError.self) { try client.unprotect(rtp: &garbage) }
            #expect(throws: SRTPError.self) { try client.unprotectRTCP(&rtcp) }
        }
        // Too short to protect, too long to be a datagram.
        var short = [UInt8](repeating: 0x80, count: 11)
        #expect(throws: SRTPError.malformed) { try server.protect(rtp: &short) }
        #expect(short.count == 11)
        var huge = [UInt8](repeating: 0x80, count: 70_000)
        #expect(throws: SRTPError.malformed) { try client.unprotect(rtp: &huge) }
        // A header claiming more CSRCs than the packet holds.
        var lying = Self.rtp(sequence: 1, payload: [])
        lying[0] = 0x8F
        #expect(throws: SRTPError.self) { try server.protect(rtp: &lying) }
        // Keys of the wrong length are refused, not read past.
        #expect(throws: SRTPError.self) { try SRTPContext(profile: profile, outboundMasterKey: [1, 2, 3], inboundMasterKey: [1, 2, 3]) }
    }

    /// The whole path: a DTLS handshake in memory, each side's exported keys, and media both ways.
    @Test func keysFromADTLSHandshakeCarryMediaBothWays() throws {
        let serverCertificate = try DTLSCertificate(), clientCertificate = try DTLSCertificate()
        let server = try DTLSEndpoint(context: DTLSContext(certificate: serverCertificate, role: .server),
                                      remoteFingerprint: clientCertificate.fingerprint)
        let client = try DTLSEndpoint(context: DTLSContext(certificate: clientCertificate, role: .client),
                                      remoteFingerprint: serverCertificate.fingerprint)
        var serverKeys: SRTPKeyingMaterial?, clientKeys: SRTPKeyingMaterial?
        var toServer = try client.start()
        while !toServer.isEmpty {
            var toClient: [[UInt8]] = []
            for datagram in toServer {
                let output = try server.receive(datagram)
                toClient += output.datagrams
                serverKeys = output.established ?? serverKeys
            }
            toServer = []
            for datagram in toClient {
                let output = try client.receive(datagram)
                toServer += output.datagrams
                clientKeys = output.established ?? clientKeys
            }
        }
        let ours = try SRTPContext(keys: #require(serverKeys), role: .server)
        let browsers = try SRTPContext(keys: #require(clientKeys), role: .client)
        var packet = Self.rtp(sequence: 100)
        try ours.protect(rtp: &packet)
        try browsers.unprotect(rtp: &packet)
        #expect(packet == Self.rtp(sequence: 100))
        var report = Self.rtcp()
        try browsers.protectRTCP(&report)
        try ours.unprotectRTCP(&report)
        #expect(report == Self.rtcp())
    }

    /// libsrtp's own reference packets (its test/srtp_driver.c, srtp_validate): AES-128 counter mode
    /// with HMAC-SHA1-80 under a fixed master key, for RTP and RTCP, through our context.
    @Test func theReferencePacketsForCounterModeMatch() throws {
        let master: [UInt8] = [
            0xE1, 0xF9, 0x7A, 0x0D, 0x3E, 0x01, 0x8B, 0xE0, 0xD6, 0x4F, 0xA3, 0x2C, 0x06, 0xDE, 0x41, 0x39,
            0x0E, 0xC6, 0x75, 0xAD, 0x49, 0x8A, 0xFE, 0xEB, 0xB6, 0x96, 0x0B, 0x3A, 0xAB, 0xE6,
        ]
        let context = try SRTPContext(profile: .aes128CmHmacSha1_80, outboundMasterKey: master, inboundMasterKey: master)
        let header: [UInt8] = [0x80, 0x0F, 0x12, 0x34, 0xDE, 0xCA, 0xFB, 0xAD, 0xCA, 0xFE, 0xBA, 0xBE]
        let plain = header + [UInt8](repeating: 0xAB, count: 16)
        let cipher = header + [
            0x4E, 0x55, 0xDC, 0x4C, 0xE7, 0x99, 0x78, 0xD8, 0x8C, 0xA4, 0xD2, 0x15, 0x94, 0x9D, 0x24, 0x02,
            0xB7, 0x8D, 0x6A, 0xCC, 0x99, 0xEA, 0x17, 0x9B, 0x8D, 0xBB,
        ]
        var packet = plain
        try context.protect(rtp: &packet)
        #expect(packet == cipher)
        try context.unprotect(rtp: &packet)
        #expect(packet == plain)

        let report = [0x81, 0xC8, 0x00, 0x0B, 0xCA, 0xFE, 0xBA, 0xBE] + [UInt8](repeating: 0xAB, count: 16)
        let protectedReport: [UInt8] = [0x81, 0xC8, 0x00, 0x0B, 0xCA, 0xFE, 0xBA, 0xBE,
            0x71, 0x28, 0x03, 0x5B, 0xE4, 0x87, 0xB9, 0xBD, 0xBE, 0xF8, 0x90, 0x41, 0xF9, 0x77, 0xA5, 0xA8,
            0x80, 0x00, 0x00, 0x01, 0x99, 0x3E, 0x08, 0xCD, 0x54, 0xD6, 0xC1, 0x23, 0x07, 0x98]
        var rtcp = report
        try context.protectRTCP(&rtcp)
        #expect(rtcp == protectedReport)
        try context.unprotectRTCP(&rtcp)
        #expect(rtcp == report)
    }
}
