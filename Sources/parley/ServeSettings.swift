import Access
import Models
import Server
import Session
import Store
import Telephony
import WebRTC
import TLS
import MCP
import SessionEngine

/// Everything `parley serve` was told, read once at start from the flags, the environment and the
/// `--config` file (each option's flag, variable and default are its `Setting`). Reading is all it
/// does: no store is opened, no thread started, so the supervisor of `--workers N` reads the same
/// settings as its workers and refuses a bad one before it starts any.
struct ServeSettings {
    var server: ServerConfiguration
    let workers: Int
    var access: Access
    let limits: SessionLimits
    let metricsListen: (host: String, port: Int)?
    /// With --upstream-ca: the system store and that file; nil: the system store, loaded by the
    /// upstream client at its first https connection.
    let upstreamTLS: TLSContext?
    let model: (primary: LanguageModelOptions.Choice, fallback: LanguageModelOptions.Choice?, policy: UpstreamPolicy)
    let speech: SpeechOptions.Choice
    let resume: ResumeOptions.Choice
    let recording: RecordingOptions.Choice
    let twilio: TwilioEndpoint.Settings
    let webrtc: WebRTCEndpoint.Settings
    /// The MCP allow-list and the filler, and the MCP clients' time-outs.
    let tools: (ToolSettings, MCPClient.Settings)
    /// SIP calls, when `--sip-port` is given.
    let sip: SIPEndpoint.Settings?

    /// The address as the listening line shows it, and its scheme.
    var shownHost: String { server.host.contains(":") ? "[\(server.host)]" : server.host }
    var scheme: String { server.servesTLS ? "https" : "http" }
    var modelSummary: String { LanguageModelOptions.summary(model.primary, model.fallback) }
    /// ", SIP on udp/tcp 5060 (tls 5061)", or nothing without SIP.
    var sipSummary: String {
        guard let sip else { return "" }
        return ", SIP on udp/tcp \(sip.port)" + (sip.tls.map { " (tls \($0.port))" } ?? "")
    }
}
