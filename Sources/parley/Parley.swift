import ArgumentParser

@main
struct Parley: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Real-time voice and agent sessions over WebSocket.",
        discussion: "Options can also come from PARLEY_* environment variables, or from a file of PARLEY_NAME=value lines given with --config FILE (or PARLEY_CONFIG).",
        subcommands: [Serve.self, MockLLMCommand.self, TalkCommand.self, TokenCommand.self],
        defaultSubcommand: Serve.self)

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let problem = ConfigFile.load(arguments: arguments) {
            printError("parley: \(problem)")
            Self.exit(withError: ExitCode.failure)
        }
        Self.main(ConfigFile.strip(arguments))
    }
}
