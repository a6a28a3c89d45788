import Metrics

/// WebRTC's series in /metrics, process-wide (relaxed atomics every loop adds to).
final class WebRTCMetrics: Sendable {
    static let shared = WebRTCMetrics(registry: .process)

    let registry: MetricsRegistry
    let callsOpen: MetricFamily
    let calls: LabelledFamily<WebRTCCallEnd>
    let offersRefused: MetricFamily
    let datagramsDropped: LabelledFamily<DatagramDrop>
    let iceRefusals: LabelledFamily<ICERefusal>
    let audioFrames: LabelledFamily<AudioFrame>

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        callsOpen = MetricFamily(name: "parley_webrtc_calls_open", help: "WebRTC calls open (offer answered, not yet ended).", kind: .gauge, registry: registry)
        calls = LabelledFamily(name: "parley_webrtc_calls_ended_total", help: "WebRTC calls ended, by why: hung up (by either side), the peer gone (ICE consent or set-up timeout), DTLS failed (handshake, fingerprint), the data channel failed, the server ended it.", registry: registry)
        offersRefused = MetricFamily(name: "parley_webrtc_offers_refused_total", help: "POST /v1/realtime/calls refused for the offer itself (malformed SDP, no audio or data channel, no Opus).", registry: registry)
        datagramsDropped = LabelledFamily(name: "parley_webrtc_datagrams_dropped_total", help: "UDP datagrams the media ports dropped, by why: not STUN, DTLS or RTP (RFC 7983), from no known peer, SRTP authentication failed or replayed, undecodable, or the socket's buffer full on sending.", registry: registry)
        iceRefusals = LabelledFamily(name: "parley_webrtc_ice_refusals_total", help: "STUN binding requests refused by the ICE-lite agent, by why (a wrong password is unauthorized).", registry: registry)
        audioFrames = LabelledFamily(name: "parley_webrtc_audio_frames_total", help: "20 ms frames of callers' audio at playout, by what the jitter buffer had: the packet, a loss recovered from the next packet's FEC, a loss concealed, or a late packet dropped.", registry: registry)
    }

    func dropped(_ reason: DatagramDrop) { datagramsDropped.add(1, reason) }

    func ended(_ reason: WebRTCCallEnd) {
        calls.add(1, reason)
        callsOpen.add(-1)
    }

    func iceRefused(_ refusal: ICELiteAgent.Refusal) {
        switch refusal {
        case .notSTUN: dropped(.malformed)
        case .badFingerprint: iceRefusals.add(1, .bad_fingerprint)
        case .malformed: iceRefusals.add(1, .malformed)
        case .unauthorized: iceRefusals.add(1, .unauthorized)
        case .unknownAttributes: iceRefusals.add(1, .unknown_attributes)
        case .roleConflict: iceRefusals.add(1, .role_conflict)
        }
    }
}

enum WebRTCCallEnd: String, MetricLabel, CaseIterable {
    /// `server`: the server ended it (its session closed, or the server stopped); `drained`: a
    /// drain's bound passed with the call still up (`--drain-seconds`).
    case hangup, peer_gone, dtls_failed, data_channel_failed, server, drained
    static let labelName = "reason"
}

enum DatagramDrop: String, MetricLabel, CaseIterable {
    case malformed, unknownPeer = "unknown_peer", srtp_authentication, srtp_replay, undecodable, sendBufferFull = "send_buffer_full", sendFailed = "send_failed"
    static let labelName = "reason"
}

enum ICERefusal: String, MetricLabel, CaseIterable {
    case malformed, unauthorized, unknown_attributes, role_conflict, bad_fingerprint
    static let labelName = "reason"
}

enum AudioFrame: String, MetricLabel, CaseIterable {
    case played, recovered, concealed, late
    static let labelName = "result"
}
