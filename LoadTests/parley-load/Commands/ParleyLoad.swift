import ArgumentParser

/// The load-test harness for parley: `hold` measures what idle sessions cost the server, `echo`
/// measures round trips under a closed-loop load, `turns` times agent replies in many Realtime
/// sessions at once (all three reach only loopback addresses), `turn-taking` speaks fixed scenarios
/// to servers side by side to compare their turn-taking, `talkers` times many people talking to
/// the embedded pipeline at once, `eval` runs scripted conversations with expectations, `webrtc`
/// holds many WebRTC calls, `sip` many SIP calls (and `sip-ramp` times how fast SIP calls are
/// taken), `density` holds sessions of one kind while a script reads their cost, `history`
/// measures what a conversation's history costs, `dial-out` places calls out through the API,
/// `live-turns` times GPT-Live's turns beside the Realtime API's, `loss-call` is the WebSocket half
/// of `make bench-webrtc-loss`, `noise` streams bad input for a long time and watches the server's
/// memory, `mcp-bench` times what MCP discovery and tool calls add to a session, and `codec`
/// measures Opus decoding and encoding against raw libopus.
@main
struct ParleyLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-load",
        abstract: "Load tests for a parley server on this machine.",
        subcommands: [HoldCommand.self, VadCommand.self, EchoCommand.self, EchoGuardCommand.self, TurnsCommand.self, CodecCommand.self, CompareCommand.self, VoiceCommand.self, TurnTakingCommand.self, TalkersCommand.self, EvalCommand.self, CallsCommand.self, WebRTCCommand.self, SIPCommand.self, SIPRampCommand.self, SurviveCommand.self, DensityCommand.self, HistoryCommand.self, DialOutCommand.self, LiveTurnsCommand.self, LossCallCommand.self, NoiseCommand.self, MCPBenchCommand.self, ReportCommand.self,
                      HoldWorkerCommand.self, EchoWorkerCommand.self, TurnsWorkerCommand.self])
}
