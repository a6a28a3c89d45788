import ArgumentParser

@main
struct Parley: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Real-time voice and agent sessions over WebSocket.",
        discussion: "Options can also come from PARLEY_* environment variables, or from a file of PARLEY_NAME=value lines given with --config FILE (or PARLEY_CONFIG).",
        subcommands: [Serve.self, MockLLMCommand.self, TalkCommand.self, TokenCommand.self, VADCheckCommand.self],
        defaultSubcommand: Serve.self)

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let problem = ConfigFile.load(arguments: arguments) {
            printError("parley: \(problem)")
            Self.exit(withError: ExitCode.failure)
        }
        // swift-argument-parser's own main, but a bad setting or a failed start is one line
        // ("parley: --workers (PARLEY_WORKERS): 'abc' is not a whole number"), without the usage.
        do {
            var command = try parseAsRoot(ConfigFile.strip(arguments))
            try command.run()
        } catch let error as SettingError {
            printError("parley: \(error)")
            Self.exit(withError: ExitCode.validationFailure)
        } catch let error as StartupError {
            printError("parley: \(error)")
            Self.exit(withError: ExitCode.failure)
        } catch {
            Self.exit(withError: error)
        }
    }
}
