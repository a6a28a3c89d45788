import CSRTP

/// SRTP and SRTCP protection for one call (RFC 3711), over libsrtp2: pure functions on buffers, no
/// thread, no clock. Made from the keys the DTLS handshake exported (RFC 5764 section 4.2): what we
/// send is protected with our side's write key, what we receive is checked with the peer's.
///
/// Two libsrtp2 sessions, one per direction, each keyed for any SSRC of its direction
/// (`ssrc_any_outbound`, `ssrc_any_inbound`), with libsrtp2's default replay window (128 packets).
/// A stream per SSRC is made on its first packet; on the inbound side only once that packet has
/// authenticated, so forged packets with made-up SSRCs cost nothing.
///
/// Not thread-safe: a call's context is used from its loop only.
package final class SRTPContext {
    package let profile: SRTPProtectionProfile
    /// Bytes `protect(rtp:)` appends: the authentication tag (10 bytes for counter mode with
    /// HMAC-SHA1-80, 16 for GCM).
    package let rtpTrailerLength: Int
    /// Bytes `protectRTCP` appends: the SRTCP index (4 bytes, RFC 3711 section 3.4) and the tag.
    package let rtcpTrailerLength: Int
    private let outbound: OpaquePointer
    private let inbound: OpaquePointer

    /// The largest packet taken: a UDP datagram's payload.
    static let maximumPacketLength = 65_507
    static let minimumRTPLength = 12
    static let minimumRTCPLength = 8

    /// libsrtp2 opened (it is not linked: Sources/CSRTP/SRTPLibrary.c) and srtp_init run, once per
    /// process, at the first call's keys: Swift initialises a static stored property once,
    /// thread-safely. nil when ready; what stops every context otherwise.
    private static let libraryFailure: SRTPError? = {
        var reason = [CChar](repeating: 0, count: 256)
        guard parley_srtp_load(&reason, reason.count) == 0 else {
            return .unavailable(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        let status = srtp_init()
        return status == srtp_err_status_ok ? nil : .library(Int32(status.rawValue))
    }()

    /// `role` is our side of the DTLS handshake: a server (Parley answering a browser) sends with
    /// the server write key and receives with the client's.
    package convenience init(keys: SRTPKeyingMaterial, role: DTLSRole) throws(SRTPError) {
        try self.init(profile: keys.profile,
                      outboundMasterKey: keys.masterKey(writtenBy: role),
                      inboundMasterKey: keys.masterKey(writtenBy: role == .server ? .client : .server))
    }

    /// What libsrtp2 allocates for one of its sessions (`srtp_t`), measured: 29,424 bytes each
    /// over 200 made after 100 (AES_CM_128_HMAC_SHA1_80, libsrtp2 2.5 on OpenSSL 3, Debian 12;
    /// mallinfo2 before and after, in C and again as 200 `SRTPContext`s in one Swift test
    /// process: 58,926 B a context against the 58,848 counted here).
    static let sessionHeapBytes = 29_424

    /// What this context holds on the heap: its two libsrtp2 sessions, one each way.
    package var heapBytes: Int { 2 * Self.sessionHeapBytes }

    /// Master keys as libsrtp2 takes them: key ‖ salt.
    package init(profile: SRTPProtectionProfile, outboundMasterKey: [UInt8], inboundMasterKey: [UInt8]) throws(SRTPError) {
        if let failure = Self.libraryFailure { throw failure }
        let keyLength = profile.masterKeyLength + profile.masterSaltLength
        guard outboundMasterKey.count == keyLength, inboundMasterKey.count == keyLength else { throw .library(Int32(srtp_err_status_bad_param.rawValue)) }
        self.profile = profile
        outbound = try Self.session(profile: profile, key: outboundMasterKey, direction: ssrc_any_outbound)
        do throws(SRTPError) {
            inbound = try Self.session(profile: profile, key: inboundMasterKey, direction: ssrc_any_inbound)
        } catch {
            srtp_dealloc(outbound)
            throw error
        }
        var rtp: UInt32 = 0, rtcp: UInt32 = 0
        _ = srtp_get_protect_trailer_length(outbound, 0, 0, &rtp)
        _ = srtp_get_protect_rtcp_trailer_length(outbound, 0, 0, &rtcp)
        rtpTrailerLength = Int(rtp)
        rtcpTrailerLength = Int(rtcp)
    }

    deinit {
        srtp_dealloc(outbound)
        srtp_dealloc(inbound)
    }

    /// Encrypts and authenticates an RTP packet in place, appending the tag. Reserve
    /// `rtpTrailerLength` bytes of spare capacity and the array is not reallocated.
    package func protect(rtp packet: inout [UInt8]) throws(SRTPError) {
        guard packet.withUnsafeBytes({ Self.headerLength(ofRTP: $0) }) != nil else { throw .malformed }
        try protect(&packet, minimum: Self.minimumRTPLength, trailer: rtpTrailerLength) { srtp_protect(outbound, $0, $1) }
    }

    /// Encrypts and authenticates an RTCP packet (compound or not) in place, appending the SRTCP
    /// index and tag; `rtcpTrailerLength` bytes of spare capacity avoid a reallocation.
    package func protectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        try protect(&packet, minimum: Self.minimumRTCPLength, trailer: rtcpTrailerLength) { srtp_protect_rtcp(outbound, $0, $1) }
    }

    /// Checks and decrypts an SRTP packet in place, dropping the tag.
    package func unprotect(rtp packet: inout [UInt8]) throws(SRTPError) {
        let length = try packet.withUnsafeMutableBytes { bytes in Result { () throws(SRTPError) in try unprotect(rtp: bytes) } }.get()
        packet.removeLast(packet.count - length)
    }

    /// Checks and decrypts an SRTCP packet in place, dropping the index and tag.
    package func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        let length = try packet.withUnsafeMutableBytes { bytes in Result { () throws(SRTPError) in try unprotectRTCP(bytes) } }.get()
        packet.removeLast(packet.count - length)
    }

    /// In place in the loop's receive buffer, with no copy: the plaintext's length.
    package func unprotect(rtp buffer: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        guard let header = Self.headerLength(ofRTP: UnsafeRawBufferPointer(buffer)), header + rtpTrailerLength <= buffer.count else {
            throw .malformed
        }
        return try unprotect(buffer, minimum: Self.minimumRTPLength) { srtp_unprotect(inbound, $0, $1) }
    }

    package func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        try unprotect(buffer, minimum: Self.minimumRTCPLength) { srtp_unprotect_rtcp(inbound, $0, $1) }
    }

    // MARK: Internals

    /// The RTP header's length with its CSRCs and extension (RFC 3550 section 5.1, 5.3.1), or nil
    /// when the packet is shorter than its header says. libsrtp2 checks this too; checked here as
    /// well, so no packet from the wire reaches C code with a header that overruns it.
    static func headerLength(ofRTP bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= minimumRTPLength else { return nil }
        var length = minimumRTPLength + 4 * Int(bytes[0] & 0x0F)
        if bytes[0] & 0x10 != 0 {
            guard length + 4 <= bytes.count else { return nil }
            length += 4 + 4 * (Int(bytes[length + 2]) << 8 | Int(bytes[length + 3]))
        }
        return length <= bytes.count ? length : nil
    }

    private static func session(profile: SRTPProtectionProfile, key: [UInt8], direction: srtp_ssrc_type_t) throws(SRTPError) -> OpaquePointer {
        var policy = srtp_policy_t()
        let libraryProfile = srtp_profile_t(rawValue: UInt32(profile.rawValue))
        guard srtp_crypto_policy_set_from_profile_for_rtp(&policy.rtp, libraryProfile) == srtp_err_status_ok,
              srtp_crypto_policy_set_from_profile_for_rtcp(&policy.rtcp, libraryProfile) == srtp_err_status_ok else {
            throw .library(Int32(srtp_err_status_bad_param.rawValue))
        }
        policy.ssrc = srtp_ssrc_t(type: direction, value: 0)
        // 0: libsrtp2's default replay window, 128 packets (RFC 3711 section 3.3.2's minimum 64).
        policy.window_size = 0
        policy.allow_repeat_tx = 0
        var session: OpaquePointer?
        // libsrtp2 derives the session keys from the master key here and keeps no pointer to it.
        var master = key
        let status = master.withUnsafeMutableBufferPointer { bytes in
            policy.key = bytes.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok, let session else { throw .library(Int32(status.rawValue)) }
        return session
    }

    private func protect(_ packet: inout [UInt8], minimum: Int, trailer: Int,
                         _ call: (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) throws(SRTPError) {
        let length = packet.count
        guard length >= minimum, length <= Self.maximumPacketLength - trailer else { throw .malformed }
        packet.append(contentsOf: repeatElement(0, count: trailer))
        var protected = Int32(length)
        let status = packet.withUnsafeMutableBytes { call($0.baseAddress, &protected) }
        guard status == srtp_err_status_ok, Int(protected) >= length, Int(protected) <= packet.count else {
            packet.removeLast(trailer)
            throw Self.error(status)
        }
        packet.removeLast(packet.count - Int(protected))
    }

    private func unprotect(_ buffer: UnsafeMutableRawBufferPointer, minimum: Int,
                           _ call: (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) throws(SRTPError) -> Int {
        guard buffer.count >= minimum, buffer.count <= Self.maximumPacketLength else { throw .malformed }
        var length = Int32(buffer.count)
        let status = call(buffer.baseAddress, &length)
        guard status == srtp_err_status_ok, length >= 0, Int(length) <= buffer.count else { throw Self.error(status) }
        return Int(length)
    }

    private static func error(_ status: srtp_err_status_t) -> SRTPError {
        switch status {
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: .replay
        case srtp_err_status_auth_fail: .authentication
        case srtp_err_status_bad_param, srtp_err_status_parse_err: .malformed
        default: .library(Int32(status.rawValue))
        }
    }
}
