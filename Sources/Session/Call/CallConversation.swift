import Codec
import Loop
import Server
import SessionEngine

/// The API's side of a call whose media a carrier holds (a WebRTC call's Opus track, a SIP call's
/// RTP, a Twilio media stream): the dialect its listeners hear (the call's own channel, the
/// sidebands attached by the call's id), its driver, and the events a phone call adds. One implementation per API, `RealtimeCallConversation` and `LiveSession`; the
/// carrier holds one and never asks which, and hands it its media leg (`MediaLeg`), which the
/// conversation's driver plays its replies on.
package protocol CallConversation: SessionWire {
    /// The session's driver: turn-taking, speech, limits, the report.
    var driver: SessionDriver! { get }
    /// The session's id (GPT-Live's on a phone line is the call's).
    var sessionID: String { get }
    /// The session begins on `socket` (the call, as its session sees it).
    func open(_ socket: any SessionSocket)
    /// A client event on the call's own channel (a WebRTC call's data channel), as the API's
    /// primary client's.
    func receive(clientText text: UnsafeRawBufferPointer)
    /// One frame of the caller's audio, decoded by `convert`, as the API hears it.
    func hear(_ convert: (AudioInput) throws -> [Int16])
    /// The server's greeting for the number called, said as the call is answered: the Realtime
    /// API's session says it as its first reply; a GPT-Live session's client speaks first, and
    /// ignores it.
    func greet(_ text: String)
    /// A turn that came as keys (the keypad's entry), answered as a spoken one would be.
    func userSaid(_ text: String)
    /// A key the caller pressed, told to the listeners in the API's words.
    func keyPressed(_ key: Character)
    /// Who answered a call Parley placed, told to the listeners in the API's words.
    func answered(by verdict: AnsweringMachineDetector.Verdict)
    /// Sidebands the call held before its session began (while it rang, or waited for its webhook).
    func adopt(_ attached: CallSidebands)
    /// The call's line (`CallLine`), which keeps its story: the progress the conversation tells
    /// its listeners (who answered, keys sent, GPT-Live's end) is kept there too.
    func joined(_ line: CallLine)
    func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier)
    func detach(sideband id: ObjectIdentifier)
    /// A client event from a sideband, as text.
    func receive(sidebandText: String)
    /// The call is over (`reason`: the API's word for why, where it has one).
    func close(_ ending: SessionEnding, reason: String?)
}
