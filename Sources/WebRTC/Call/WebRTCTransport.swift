import Media
import TLS

/// One call's transport as a value, in the manner of str0m's `Rtc`: the ICE-lite agent, the DTLS
/// endpoint (Parley its server, `a=setup:passive`), SRTP once DTLS has made its keys, and the data
/// channels over SCTP, composed with no socket, no loop and no clock of its own. Datagrams, text
/// to send and the time go in; what to send where, what the session hears and how the call ended
/// come out, and `deadline` says when it next wants the time. `WebRTCCall` carries its outputs out
/// on the loop.
///
/// Its rules: the call ends once, for the first reason that holds (a later one is not an end); a
/// peer that never nominates within the set-up time, or whose chosen address sends nothing
/// authenticated for the consent time (a check, SRTP, SRTCP or DTLS: RFC 7675), is gone; late
/// time (a loop that stalled) runs each due timer once, not once per deadline missed. Tested on a
/// clock the test drives (`WebRTCTransportTests`).
struct WebRTCTransport {
    enum Output: Equatable {
        /// A datagram for the network.
        case transmit([UInt8], to: TransportAddress)
        /// ICE chose where the peer is (the only place media goes, RFC 8445 section 12).
        case selected(TransportAddress, replacing: TransportAddress?)
        /// A check refused (counted).
        case refused(ICELiteAgent.Refusal)
        /// DTLS made the SRTP keys: media may flow.
        case mediaReady
        /// The `oai-events` channel opened: the session may begin.
        case eventsOpened
        /// A client event on `oai-events`.
        case text(String)
        /// The call is over, for this reason; `detail` says what failed, for the log.
        case ended(WebRTCCallEnd, detail: String?)
    }

    private(set) var ice: ICELiteAgent
    let dtls: DTLSEndpoint
    private(set) var srtp: SRTPContext?
    private var channels: DataChannels
    /// The `oai-events` channel's stream, once the browser opened it.
    private(set) var eventsStream: UInt16?
    /// Where ICE said the peer is.
    private(set) var peer: TransportAddress?
    private(set) var ended: WebRTCCallEnd?
    /// OpenSSL's DTLS state (counted as it was made), SRTP's contexts, the data channels' buffers.
    var heapBytes: Int { dtls.heapBytes + (srtp?.heapBytes ?? 0) + channels.heapBytes }

    init(offer: WebRTCOffer, local: ICECredentials, ice settings: ICELiteAgent.Settings, dtls: DTLSEndpoint, now: UInt64) {
        self.dtls = dtls
        ice = ICELiteAgent(local: local, remote: ICECredentials(ufrag: offer.iceUfrag, password: offer.icePwd), now: now, settings: settings)
        var configuration = SCTPAssociation.Configuration()
        configuration.maxOutgoingMessageBytes = Int(min(offer.maxMessageSize, UInt64(configuration.maxOutgoingMessageBytes)))
        configuration.remotePort = offer.sctpPort
        // SCTP packets travel as DTLS application data: each must fit one record in one datagram.
        // The cipher is not chosen yet (DTLS_get_data_mtu is 0 until it is), and Parley's DTLS
        // offers AEAD suites only: 13 bytes of record header, 8 of explicit nonce and 16 of tag
        // (AES-GCM, the largest) under the 1,200-byte datagram leave 1,163.
        configuration.maxPacketBytes = min(configuration.maxPacketBytes, DTLSEndpoint.defaultMTU - 13 - 8 - 16)
        channels = DataChannels(association: SCTPAssociation(configuration: configuration), role: .server)
    }

    // MARK: In

    mutating func receive(stun datagram: UnsafeRawBufferPointer, from: TransportAddress, now: UInt64) -> [Output] {
        guard ended == nil else { return [] }
        var out: [Output] = []
        for action in ice.receive(datagram, from: from, now: now) {
            switch action {
            case .send(let bytes, let to):
                out.append(.transmit(bytes, to: to))
            case .selected(let address):
                out.append(.selected(address, replacing: peer))
                peer = address
            case .refused(let refusal):
                out.append(.refused(refusal))
            case .expired:
                end(.peer_gone, into: &out)
            }
        }
        return out
    }

    mutating func receive(dtls datagram: UnsafeRawBufferPointer, from: TransportAddress, now: UInt64) -> [Output] {
        guard ended == nil else { return [] }
        var out: [Output] = []
        let output: DTLSEndpoint.Output
        do throws(DTLSError) { output = try dtls.receive(datagram) } catch {
            end(.dtls_failed, detail: "DTLS failed: \(error)", into: &out)
            return out
        }
        transmit(output.datagrams, into: &out)
        if let keys = output.established {
            do throws(SRTPError) { srtp = try SRTPContext(keys: keys, role: .server) } catch {
                end(.dtls_failed, detail: "SRTP could not start: \(error)", into: &out)
                return out
            }
            out.append(.mediaReady)
        }
        // Application data is only ever under the handshake's keys.
        if !output.applicationData.isEmpty { ice.authenticated(from: from, now: now) }
        for packet in output.applicationData { carry(channels.receive(packet, now: now), now: now, into: &out) }
        if output.peerClosed { end(.hangup, into: &out) }
        return out
    }

    /// SRTP or SRTCP that authenticated, from `from`: the peer is there (RFC 7675's consent).
    mutating func heardMedia(from: TransportAddress, now: UInt64) {
        ice.authenticated(from: from, now: now)
    }

    /// A session event for the `oai-events` channel; a channel that cannot take it (its send
    /// buffer full: a client that stopped reading; the event larger than the client takes) ends
    /// the call, which cannot go on as the client expects.
    mutating func send(text: String, now: UInt64) -> [Output] {
        guard ended == nil, let stream = eventsStream else { return [] }
        var out: [Output] = []
        do throws(SCTPSendError) {
            carry(try channels.send(text: text, on: stream, now: now), now: now, into: &out)
        } catch {
            end(.data_channel_failed, detail: "event not sent: \(error)", into: &out)
        }
        return out
    }

    // MARK: Time

    /// When it next wants the time: ICE's consent and set-up deadlines, DTLS's retransmission,
    /// SCTP's timers, whichever is first; nil once ended.
    func deadline(now: UInt64) -> UInt64? {
        guard ended == nil else { return nil }
        let next = min(ice.deadline ?? .max, dtls.retransmissionDeadline(now: now) ?? .max, channels.nextDeadline ?? .max)
        return next == .max ? nil : next
    }

    /// The time is `now`: each timer that is due runs once, however many of its deadlines passed
    /// (a loop that stalled for a minute retransmits once, then keeps to its schedule).
    mutating func handleTimeout(now: UInt64) -> [Output] {
        guard ended == nil else { return [] }
        var out: [Output] = []
        if ice.tick(now: now) == .expired {
            end(.peer_gone, into: &out)
            return out
        }
        if let deadline = dtls.retransmissionDeadline(now: now), deadline <= now {
            do throws(DTLSError) { transmit(try dtls.handleTimeout(), into: &out) } catch {
                end(.dtls_failed, detail: "DTLS gave up: \(error)", into: &out)
                return out
            }
        }
        if let deadline = channels.nextDeadline, deadline <= now { carry(channels.tick(now: now), now: now, into: &out) }
        return out
    }

    // MARK: The end

    /// Ends the call (once): DTLS's close_notify to the peer, then `.ended`.
    mutating func end(_ reason: WebRTCCallEnd) -> [Output] {
        var out: [Output] = []
        end(reason, into: &out)
        return out
    }

    private mutating func end(_ reason: WebRTCCallEnd, detail: String? = nil, into out: inout [Output]) {
        guard ended == nil else { return }
        ended = reason
        transmit(dtls.close(), into: &out)
        out.append(.ended(reason, detail: detail))
    }

    // MARK: Out

    private func transmit(_ datagrams: [[UInt8]], into out: inout [Output]) {
        guard let peer else { return }
        for datagram in datagrams { out.append(.transmit(datagram, to: peer)) }
    }

    /// The data channels' actions: packets out through DTLS, the events channel's life and text.
    private mutating func carry(_ actions: [DataChannels.Action], now: UInt64, into out: inout [Output]) {
        for action in actions {
            guard ended == nil else { return }
            switch action {
            case .send(let packet):
                do throws(DTLSError) { transmit(try dtls.write(packet), into: &out) } catch {
                    return end(.dtls_failed, detail: "DTLS write failed: \(error)", into: &out)
                }
            case .connected:
                break
            case .opened(let stream, let label, _):
                // The Realtime API's events travel on the channel the client opens as `oai-events`;
                // other channels are answered (DCEP) and ignored.
                guard label == "oai-events", eventsStream == nil else { continue }
                eventsStream = stream
                out.append(.eventsOpened)
            case .message(let stream, let message):
                guard stream == eventsStream, case .text(let event) = message else { continue }
                out.append(.text(event))
            case .closed(let stream):
                if stream == eventsStream { end(.hangup, into: &out) }
            case .ended:
                end(.data_channel_failed, into: &out)
            }
        }
    }
}
