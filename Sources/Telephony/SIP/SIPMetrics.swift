import Metrics
import SIP
import SessionEngine

/// SIP's series in /metrics: calls open and how they ended, what was refused and why, the
/// requests and RTP packets dropped, keys pressed, and how long a call took to answer.
final class SIPMetrics: Sendable {
    static let shared = SIPMetrics(registry: .process)

    let registry: MetricsRegistry
    let callsOpen: MetricFamily
    let calls: LabelledFamily<SIPDialogEnd>
    let refused: LabelledFamily<SIPRefusal>
    let messagesDropped: LabelledFamily<SIPDrop>
    let rtpDropped: LabelledFamily<RTPDrop>
    let dtmf: MetricFamily
    let setup: Histogram
    let dialed: MetricFamily
    let dialFailures: LabelledFamily<SIPCallFailure.Kind>
    let dialSetup: Histogram
    let answeredBy: LabelledFamily<AnsweringMachineDetector.Answer>
    let dialRefused: LabelledFamily<SIPDialRefusal>
    let registrations: LabelledFamily<SIPRegistrationResult>

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        callsOpen = MetricFamily(name: "parley_sip_calls_open", help: "SIP calls in progress (an INVITE taken, not yet ended).", kind: .gauge, registry: registry)
        calls = LabelledFamily(name: "parley_sip_calls_total", help: "SIP calls ended, by how.", registry: registry)
        refused = LabelledFamily(name: "parley_sip_refusals_total", help: "INVITEs refused with a final response, by why.", registry: registry)
        messagesDropped = LabelledFamily(name: "parley_sip_messages_dropped_total", help: "SIP messages dropped without an answer, by why.", registry: registry)
        rtpDropped = LabelledFamily(name: "parley_sip_rtp_dropped_total", help: "RTP packets of SIP calls dropped, by why (a stranger's address, a payload type not answered, a send that failed).",
                                    registry: registry)
        dtmf = MetricFamily(name: "parley_sip_dtmf_digits_total", help: "Keys pressed on SIP calls (RFC 4733 events and SIP INFO).", registry: registry)
        setup = Histogram(name: "parley_sip_call_setup_seconds", help: "From an INVITE's arrival to the 200 OK that answers it.",
                          bounds: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registry: registry)
        dialed = MetricFamily(name: "parley_sip_calls_placed_total", help: "SIP calls Parley placed (POST /v1/realtime/calls with a SIP transport).", registry: registry)
        dialFailures = LabelledFamily(name: "parley_sip_calls_unanswered_total", help: "SIP calls Parley placed that were not answered, by why.", registry: registry)
        dialRefused = LabelledFamily(name: "parley_sip_calls_refused_out_total", help: "Calls out refused before an INVITE went: the trunk at its limit of calls at once or a second.",
                                     registry: registry)
        registrations = LabelledFamily(name: "parley_sip_registrations_total", help: "REGISTERs with trunks answered, by result (a refresh counts again).",
                                       registry: registry)
        dialSetup = Histogram(name: "parley_sip_call_answer_seconds", help: "From a placed call's INVITE to its answer (the ringing included).",
                              bounds: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60], registry: registry)
        answeredBy = LabelledFamily(name: "parley_sip_calls_answered_by_total", help: "Placed calls answered, by who answered as the answering-machine detection decided it.",
                                    registry: registry)
    }
}

/// How a SIP call ended (`end`): its dialog's end.
extension SIPDialogEnd: MetricLabel {
    package static let labelName = "end"
}

/// Why an INVITE was refused (`reason`).
enum SIPRefusal: String, MetricLabel, CaseIterable {
    case sourceNotAllowed = "source_not_allowed", unauthorized, noCommonCodec = "no_common_codec", busy, rejected, badRequest = "bad_request"
    /// Past the loop's INVITEs a second (`--sip-max-invites`); `busy` is past its calls held, or no RTP port free.
    case rateLimited = "rate_limited"
    /// SDES keys offered over plain signalling, or a plain offer where `--sip-srtp required`.
    case srtp
    /// The server drains: 503 with Retry-After (issue 73).
    case draining
    static let labelName = "reason"
}

/// Why a SIP message was dropped (`reason`).
enum SIPDrop: String, MetricLabel, CaseIterable {
    case malformed, tooLarge = "too_large", unmatched
    static let labelName = "reason"

    /// Why a datagram that did not parse is dropped: too large when it passed the parser's bound
    /// on a header section (a UDP datagram cannot pass the body's), else malformed.
    init(_ error: SIPParseError) {
        switch error {
        case .headerSectionTooLarge, .bodyTooLarge: self = .tooLarge
        default: self = .malformed
        }
    }
}

/// Why a call Parley placed was not answered (`reason`).
extension SIPCallFailure.Kind: MetricLabel {
    package static let labelName = "reason"
}

/// Why a call out was refused before it was placed (`reason`).
enum SIPDialRefusal: String, MetricLabel, CaseIterable {
    case trunkBusy = "trunk_busy", trunkRateLimited = "trunk_rate_limited"
    static let labelName = "reason"
}

/// How a registration with a trunk went (`result`).
enum SIPRegistrationResult: String, MetricLabel, CaseIterable {
    case registered, failed
    static let labelName = "result"
}

/// Who answered a placed call (`answer`).
extension AnsweringMachineDetector.Answer: MetricLabel {
    public static let labelName = "answer"
}

/// Why an RTP packet of a SIP call was dropped (`reason`).
enum RTPDrop: String, MetricLabel, CaseIterable {
    case malformed, stranger, payloadType = "payload_type", sendBufferFull = "send_buffer_full", sendFailed = "send_failed"
    /// SRTP that failed its check (a forged or replayed packet, the wrong key), or came before the key.
    case srtp
    static let labelName = "reason"
}
