import Access
import SessionEngine

/// Which API speaks over a call, with what it was asked to begin with: the one place a call's
/// API is chosen (its webhook's answer, call control's `/accept`, a placed call's request, a
/// WebRTC offer's path, a media stream's `api` parameter), so that the carrier holds any
/// `CallConversation` with no code per pair.
package enum CallAPI: Equatable, Sendable {
    /// The Realtime API, with the session's settings on top of the server's for calls.
    case realtime(SessionUpdate?)
    /// GPT-Live, started with `config` as the call opens.
    case live(LiveSessionConfig)

    /// The conversation for the call `opening` describes.
    package func conversation(_ opening: CallOpening) -> any CallConversation {
        switch self {
        case .realtime(let update):
            return RealtimeCallConversation(opening, options: opening.options(update))
        case .live(let config):
            let session = LiveSession(endpoint: opening.endpoint, admitted: opening.admitted, options: opening.options(nil),
                                      endpointName: "\(opening.carrier) (live)", traceparent: opening.traceparent,
                                      leg: opening.leg, callID: opening.isPhoneLine ? opening.callID : nil)
            session.startsWith = config
            return session
        }
    }
}

/// What a carrier says of the call it opens a conversation on, whichever API that is.
package struct CallOpening {
    /// The id call control and sidebands name the call by.
    package var callID: String
    package var endpoint: RealtimeEndpoint
    /// The caller's place in its tenant's count, which the session holds.
    package var admitted: Admitted
    /// The carrier, as the session's log lines and trace name it.
    package var carrier: String
    /// The call's media: what the conversation's replies play on.
    package var leg: any MediaLeg
    /// The session's settings from what the API was given (GPT-Live's come with its start).
    package var options: (SessionUpdate?) -> SessionEngine.Options
    /// A phone line (SIP, a Twilio media stream): the echo guard is always on, as a handset's
    /// speaker leaks into its microphone, and a GPT-Live session takes the call's id as its own.
    /// A browser's call (WebRTC) has the endpoint's default, and GPT-Live's session its own id.
    package var isPhoneLine: Bool
    /// The dialect of the Realtime API's events: GA's on phone lines, as OpenAI's SIP calls speak
    /// it; a WebRTC offer's request says (its `OpenAI-Beta` header).
    package var dialect: Dialect
    package var traceparent: String?

    package init(callID: String, endpoint: RealtimeEndpoint, admitted: Admitted, carrier: String, leg: any MediaLeg,
                 options: @escaping (SessionUpdate?) -> SessionEngine.Options, isPhoneLine: Bool = true, dialect: Dialect = .ga, traceparent: String? = nil) {
        self.callID = callID
        self.endpoint = endpoint
        self.admitted = admitted
        self.carrier = carrier
        self.leg = leg
        self.options = options
        self.isPhoneLine = isPhoneLine
        self.dialect = dialect
        self.traceparent = traceparent
    }
}
