import ArgumentParser

@main
struct Parley: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Real-time voice and agent sessions over WebSocket.",
        subcommands: [Serve.self],
        defaultSubcommand: Serve.self)
}
