import Access
import SessionEngine

/// Which API speaks over a call, with what it was asked to begin with: the one place a call's
/// API is chosen (its webhook's answer, call control's `/accept`, a placed call's request), so
/// that the carrier holds any `CallConversation` with no code per pair.
package enum CallAPI: Equatable, Sendable {
    /// The Realtime API, with the session's settings on top of the server's for calls.
    case realtime(SessionUpdate?)
    /// GPT-Live, started with `config` as the call opens.
    case live(LiveSessionConfig)

    /// The conversation for a call named `callID` whose audio `leg` carries; `options` makes the
    /// session's settings from what the API was given (GPT-Live's come with its start).
    package func conversation(callID: String, endpoint: RealtimeEndpoint, admitted: Admitted, carrier: String,
                              options: (SessionUpdate?) -> SessionEngine.Options, leg: any MediaLeg) -> any CallConversation {
        switch self {
        case .realtime(let update):
            return RealtimeCallConversation(callID: callID, endpoint: endpoint, admitted: admitted, options: options(update), endpointName: carrier, leg: leg)
        case .live(let config):
            let session = LiveSession(endpoint: endpoint, admitted: admitted, options: options(nil), endpointName: "\(carrier) (live)", traceparent: nil,
                                      phoneCall: (callID, leg))
            session.startsWith = config
            return session
        }
    }
}
