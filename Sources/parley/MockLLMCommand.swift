import ArgumentParser
import Server
import Session
import MockLLM
import TLS
#if canImport(Glibc)
import Glibc
#endif

struct MockLLMCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-llm",
        abstract: "Run an OpenAI-compatible (and Anthropic Messages) streaming server that makes up replies.",
        discussion: """
            POST /v1/chat/completions (stream true or false), POST /v1/messages, GET /v1/models. Requests may \
            override the options with headers: X-Mock-Fault (none, 500, 429, stall, drop), X-Mock-Tokens, \
            X-Mock-First-Token-Ms, X-Mock-Tokens-Per-Second.
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8089

    @Option(help: "Event loops.")
    var loops = 1

    @Option(help: "Milliseconds from request to first token.")
    var firstTokenMs = 50.0

    @Option(help: "Tokens (words) per second after the first.")
    var tokensPerSecond = 50.0

    @Option(help: "Words in each reply.")
    var replyTokens = 20

    @Option(help: "Fault to inject in every response: none, 500, 429, stall, drop.")
    var fault = "none"

    @Option(help: "What POST /v1/audio/transcriptions answers for any non-empty upload.")
    var transcript = "what is the weather like in Paris"

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain: serve https (with --tls-key).", valueName: "file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for --tls-cert.", valueName: "file"))
    var tlsKey: String?

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard MockFault(rawValue: fault) != nil else { throw ValidationError("--fault must be one of none, 500, 429, stall, drop") }
        guard tokensPerSecond > 0, firstTokenMs >= 0, replyTokens >= 0, loops >= 1 else {
            throw ValidationError("rates and counts must be positive")
        }
    }

    @OptionGroup(title: "Logging")
    var logging: LogOptions

    func run() throws {
        try logging.bootstrap()
        var options = MockLLMOptions()
        options.timeToFirstToken = firstTokenMs / 1000
        options.tokensPerSecond = tokensPerSecond
        options.replyTokens = replyTokens
        options.fault = MockFault(rawValue: fault)!
        var config = ServerConfiguration()
        config.host = host
        config.port = port
        config.loops = loops
        // Replies stream for as long as they are configured to; the keep-alive idle time covers the gaps.
        config.handshakeTimeout = 60
        config.tlsCertificateFile = tlsCert
        config.tlsKeyFile = tlsKey
        var routes = Router.Builder()
        MockLLMServer.install(on: &routes, options: options)
        MockSpeechRoutes.install(on: &routes, transcript: transcript)
        let server: Server
        do {
            server = try Server(configuration: config, routes: routes)
        } catch let error as TLSError {
            printError("parley mock-llm: TLS: \(error)")
            throw ExitCode.failure
        } catch {
            printError("parley mock-llm: cannot listen on \(host):\(port): \(error)")
            throw ExitCode.failure
        }
        print("parley mock-llm listening on \(config.servesTLS ? "https" : "http")://\(host):\(server.port)/v1  (fault: \(fault), \(replyTokens) tokens at \(tokensPerSecond)/s after \(firstTokenMs) ms)")
        fflush(nil)
        try server.runUntilTerminated()
    }
}
