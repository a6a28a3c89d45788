internal import COpenSSL
internal import CTLS

/// One end of a DTLS-SRTP association (RFC 5764): an OpenSSL `SSL` over two memory BIOs, with no
/// socket, no thread and no clock of its own. The event loop that owns the call's UDP socket hands
/// each DTLS datagram to `receive` and sends the datagrams each call returns; SCTP packets of the
/// data channel go out through `write` and come back in `receive`'s application data.
///
/// Once the handshake is done, the peer's certificate is checked against the fingerprint its SDP
/// gave, and the SRTP profile and keys are handed out once, in the `Output` of the call that
/// finished it. Any thrown error ends the association: the caller sends what `close()` returns and
/// ends the call.
///
/// Only the retransmission timer is OpenSSL's: it runs on OpenSSL's own clock, which cannot be
/// passed in, so `retransmissionDeadline(now:)` translates it to the caller's.
///
/// What OpenSSL allocates for this endpoint is counted in `heapBytes` (CTLS's allocator hooks).
package final class DTLSEndpoint {
    package enum State: Equatable, Sendable {
        case handshaking, connected, closed, failed
    }

    /// What one call produced.
    package struct Output {
        /// To send to the peer, in order, each one UDP datagram.
        package var datagrams: [[UInt8]] = []
        /// Decrypted application data (SCTP packets), one entry per record.
        package var applicationData: [[UInt8]] = []
        /// Set by the call that completed the handshake, and only then: the SRTP profile and keys.
        package var established: SRTPKeyingMaterial?
        /// The peer sent close_notify (answered with ours, in `datagrams`).
        package var peerClosed = false
    }

    /// Browsers' own path MTU guess for WebRTC, which leaves room for IPv6, UDP and a TURN
    /// channel's headers on any path that carries 1280-byte IPv6 packets.
    package static let defaultMTU = 1200
    /// The largest DTLS record (2^14 bytes of plaintext and 2,048 of expansion, RFC 6347 section
    /// 4.1) and its header: a longer datagram is not read at all.
    package static let maximumDatagramLength = 16_384 + 2_048 + DTLSDatagrams.recordHeaderLength
    /// The most application data one `write` takes: one record's plaintext.
    package static let maximumApplicationDataLength = 16_384
    /// RFC 5764 section 4.2.
    static let exporterLabel = "EXTRACTOR-dtls_srtp"

    private let ssl: OpaquePointer
    private let rbio: OpaquePointer
    private let wbio: OpaquePointer
    package let role: DTLSRole
    private let remoteFingerprint: DTLSFingerprint
    private let mtu: Int
    package private(set) var state = State.handshaking
    /// Whether OpenSSL finished the handshake (true too when the fingerprint then failed): only then
    /// has close_notify a meaning.
    private var handshakeFinished = false
    private var closeNotifySent = false
    /// Bytes OpenSSL holds for this endpoint: the SSL object, its BIOs, and buffers while in use.
    package private(set) var heapBytes = 0

    /// `remoteFingerprint` is the one from the peer's SDP. `initialRetransmission` is RFC 6347's 1 s
    /// (section 4.2.4.1), doubled on each expiry; tests shorten it.
    package init(context: DTLSContext, remoteFingerprint: DTLSFingerprint, mtu: Int = defaultMTU,
                 initialRetransmission: Duration = .seconds(1)) throws(DTLSError) {
        let before = parley_tls_thread_heap_bytes()
        guard let ssl = SSL_new(context.raw) else { throw .setup(TLSError.fromQueue("SSL_new").description) }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .setup(TLSError.fromQueue("BIO_new").description)
        }
        let (seconds, attoseconds) = initialRetransmission.components
        let microseconds = UInt32(clamping: max(1_000, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
        // The SSL owns both BIOs from here, whatever the outcome.
        guard parley_dtls_prepare(ssl, rbio, wbio, mtu, microseconds) == 1 else {
            SSL_free(ssl)
            throw .setup(TLSError.fromQueue("cannot prepare the DTLS endpoint (MTU \(mtu))").description)
        }
        if context.role == .server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        self.ssl = ssl
        self.rbio = rbio
        self.wbio = wbio
        self.mtu = mtu
        role = context.role
        self.remoteFingerprint = remoteFingerprint
        heapBytes = parley_tls_thread_heap_bytes() - before
    }

    deinit { SSL_free(ssl) }

    /// The client's first flight (ClientHello); nothing for a server, which waits for one.
    package func start() throws(DTLSError) -> [[UInt8]] {
        guard role == .client, state == .handshaking else { return [] }
        try stepHandshake()
        return drain()
    }

    /// Reads one datagram from the peer: handshake records move the handshake on, application
    /// records are decrypted. Records DTLS discards (a bad MAC, a stale epoch, garbage) are dropped
    /// silently, as RFC 6347 section 4.1.2.7 has it. After the endpoint closed or failed, datagrams
    /// are ignored.
    package func receive(_ datagram: UnsafeRawBufferPointer) throws(DTLSError) -> Output {
        var output = Output()
        guard state == .handshaking || state == .connected, !datagram.isEmpty else { return output }
        guard datagram.count <= Self.maximumDatagramLength else { throw .datagramTooLarge(datagram.count) }
        // One datagram at a time: the read BIO holds at most this one, and whatever OpenSSL left of
        // it (never more than a truncated record) is dropped after.
        defer { _ = parley_bio_reset(rbio) }
        allocateRecordBuffers()
        _ = counted { BIO_write(rbio, datagram.baseAddress, Int32(datagram.count)) }
        if state == .handshaking {
            output.established = try stepHandshake()
        }
        if state == .connected {
            try read(into: &output, capacity: datagram.count)
        }
        output.datagrams = drain()
        return output
    }

    package func receive(_ datagram: [UInt8]) throws(DTLSError) -> Output {
        try datagram.withUnsafeBytes { bytes in Result { () throws(DTLSError) in try receive(bytes) } }.get()
    }

    /// Encrypts `bytes` as one application data record; the datagram(s) to send.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(DTLSError) -> [[UInt8]] {
        guard state == .connected else { throw .notConnected }
        guard bytes.count <= Self.maximumApplicationDataLength else { throw .applicationDataTooLarge(bytes.count) }
        guard !bytes.isEmpty else { return [] }
        ERR_clear_error()
        allocateRecordBuffers()
        var written = 0
        let result = counted { SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &written) }
        guard result == 1 else { throw failure(result, during: "DTLS write") }
        return drain()
    }

    package func write(_ bytes: [UInt8]) throws(DTLSError) -> [[UInt8]] {
        try bytes.withUnsafeBytes { raw in Result { () throws(DTLSError) in try write(raw) } }.get()
    }

    /// When `handleTimeout` is next due, in the caller's nanoseconds (`now` is the caller's clock
    /// at this moment), or nil while no flight awaits an answer.
    package func retransmissionDeadline(now: UInt64) -> UInt64? {
        let remaining = parley_dtls_timeout_us(ssl)
        guard remaining >= 0 else { return nil }
        return now &+ UInt64(remaining) &* 1_000
    }

    /// Resends the last flight if its timer has expired (RFC 6347 section 4.2.4); the datagrams to
    /// send, none if it was not yet due.
    package func handleTimeout() throws(DTLSError) -> [[UInt8]] {
        guard state == .handshaking || state == .connected else { return [] }
        ERR_clear_error()
        allocateRecordBuffers()
        guard counted({ parley_dtls_handle_timeout(ssl) }) >= 0 else {
            state = .failed
            ERR_clear_error()
            throw .retransmissionsExhausted
        }
        return drain()
    }

    /// Ends the association: close_notify if the handshake finished (RFC 5246 section 7.2.1), and
    /// whatever OpenSSL still had to send (the alert of a failure). Later calls do nothing.
    package func close() -> [[UInt8]] {
        sendCloseNotify()
        if state != .failed { state = .closed }
        return drain()
    }

    /// The most application data a record can carry and still fit the MTU, once the handshake has
    /// chosen a cipher: what the data channel's SCTP packets must stay within.
    package var applicationDataMTU: Int { Int(DTLS_get_data_mtu(ssl)) }

    // MARK: Internals

    /// Moves the handshake on; the keys when this step completed it.
    @discardableResult
    private func stepHandshake() throws(DTLSError) -> SRTPKeyingMaterial? {
        ERR_clear_error()
        let result = counted { SSL_do_handshake(ssl) }
        guard result == 1 else {
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return nil
            default: throw failure(result, during: "DTLS handshake")
            }
        }
        handshakeFinished = true
        do throws(DTLSError) {
            let keys = try establish()
            state = .connected
            return keys
        } catch {
            state = .failed
            throw error
        }
    }

    /// The checks and exports of a finished handshake: the peer is who SDP said (RFC 8122 section
    /// 5), a profile was agreed, and its keys exported (RFC 5764 section 4.2).
    private func establish() throws(DTLSError) -> SRTPKeyingMaterial {
        let actual = counted { peerFingerprint() }
        guard actual == remoteFingerprint else { throw .fingerprintMismatch(expected: remoteFingerprint, actual: actual) }
        guard let selected = SSL_get_selected_srtp_profile(ssl),
              let profile = SRTPProtectionProfile(rawValue: UInt16(truncatingIfNeeded: selected.pointee.id)) else {
            throw .noSRTPProfile
        }
        var exported = [UInt8](repeating: 0, count: profile.exportLength)
        let label = Self.exporterLabel
        guard counted({ SSL_export_keying_material(ssl, &exported, exported.count, label, label.utf8.count, nil, 0, 0) }) == 1,
              let keys = SRTPKeyingMaterial(profile: profile, exported: exported) else {
            throw .keyExport(TLSError.fromQueue("SSL_export_keying_material").description)
        }
        return keys
    }

    private func peerFingerprint() -> DTLSFingerprint? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return DTLSFingerprint(bytes: Array(digest.prefix(Int(length))))
    }

    /// Decrypts every application record the datagram held. Plaintext is never longer than its
    /// record, so `capacity` (the datagram's length) bounds the scratch space.
    private func read(into output: inout Output, capacity: Int) throws(DTLSError) {
        var scratch = [UInt8](repeating: 0, count: capacity)
        while true {
            var count = 0
            let result = counted { SSL_read_ex(ssl, &scratch, scratch.count, &count) }
            if result == 1 {
                output.applicationData.append(Array(scratch.prefix(count)))
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                // The peer's close_notify, answered with ours.
                output.peerClosed = true
                sendCloseNotify()
                state = .closed
                return
            default:
                throw failure(result, during: "DTLS read")
            }
        }
    }

    private func sendCloseNotify() {
        guard handshakeFinished && !closeNotifySent else { return }
        closeNotifySent = true
        ERR_clear_error()
        allocateRecordBuffers()
        if counted({ SSL_shutdown(ssl) }) < 0 { ERR_clear_error() }
    }

    /// Once the handshake is over, OpenSSL's record buffers (about 17 KB each way, sized for the
    /// largest record) are freed after every call (in `drain`) and made again before the next:
    /// SSL_MODE_RELEASE_BUFFERS does not apply to DTLS, a call's data channel is quiet most of the
    /// time, and 500 calls would otherwise keep 17 MB of empty buffers. OpenSSL's DTLS writer does
    /// not make its buffer itself, so this must come before anything that may write.
    private func allocateRecordBuffers() {
        guard handshakeFinished else { return }
        _ = counted { SSL_alloc_buffers(ssl) }
    }

    /// What OpenSSL wrote since the last drain, as datagrams; the write BIO is left empty.
    private func drain() -> [[UInt8]] {
        if handshakeFinished { _ = counted { SSL_free_buffers(ssl) } }
        var data: UnsafePointer<UInt8>?
        let length = parley_bio_contents(wbio, &data)
        guard length > 0, let data else { return [] }
        let datagrams = DTLSDatagrams.split(UnsafeRawBufferPointer(start: data, count: length), mtu: mtu)
        _ = parley_bio_reset(wbio)
        return datagrams
    }

    private func failure(_ result: Int32, during operation: String) -> DTLSError {
        state = .failed
        let reason = TLSError.fromQueue(operation).description
        return handshakeFinished ? .failed(reason) : .handshake(reason)
    }

    @inline(__always)
    private func counted<T>(_ call: () -> T) -> T {
        let before = parley_tls_thread_heap_bytes()
        let result = call()
        heapBytes += parley_tls_thread_heap_bytes() - before
        return result
    }
}
