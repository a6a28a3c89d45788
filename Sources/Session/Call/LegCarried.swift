import Server
import SessionEngine

/// A conversation whose audio a call's leg carries: what the driver asks of the media goes to the
/// leg, written once for every API (`RealtimeCallConversation`, `LiveSession` on a call). With no
/// leg (a Live session on a WebSocket) the answers are a WebSocket's.
package protocol LegCarried: SessionWire {
    var leg: (any MediaLeg)? { get }
}

extension LegCarried {
    package func heardMs(of responseID: String) -> Int? { leg?.heardMs(of: responseID) }
    package func speechStopped(responseID: String, on socket: any SessionSocket) { leg?.speechStopped(responseID: responseID, on: socket) }
    package func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? { leg?.speechPaused(responseID: responseID, on: socket) }
    package var resendsAfterPause: Bool { leg?.resendsAfterPause ?? false }
    package var carriesLossyMedia: Bool { leg?.carriesLossyMedia ?? false }
    package var pullsReplies: Bool { leg?.pullsReplies ?? false }
    package func press(_ key: Character) -> Bool { leg?.press(key) ?? false }
    package func observed(_ fact: SessionFact) { leg?.observed(fact) }
}
