import ArgumentParser
import Logging
import Loop

/// `--log-level` and `--log-format`: what goes to stderr, and in which shape.
struct LogOptions: ParsableArguments {
    @Option(help: "Least severe log lines written to stderr: trace, debug, info, notice, warning, error or critical (PARLEY_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(help: "Log lines as logfmt (key=value, the default) or json, one per line on stderr (PARLEY_LOG_FORMAT).")
    var logFormat: String?

    var level: Logger.Level { Logger.Level(rawValue: logLevel ?? Environment.string("PARLEY_LOG_LEVEL") ?? "info") ?? .info }
    var format: StderrLogHandler.Format { StderrLogHandler.Format(rawValue: logFormat ?? Environment.string("PARLEY_LOG_FORMAT") ?? "logfmt") ?? .logfmt }

    func validate() throws {
        let level = logLevel ?? Environment.string("PARLEY_LOG_LEVEL") ?? "info"
        guard Logger.Level(rawValue: level) != nil else {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let format = logFormat ?? Environment.string("PARLEY_LOG_FORMAT") ?? "logfmt"
        guard StderrLogHandler.Format(rawValue: format) != nil else { throw ValidationError("--log-format must be logfmt or json") }
    }

    /// Sends every Logger in the process to stderr in this shape; once, before anything logs.
    func bootstrap() {
        StderrLogHandler.bootstrap(level: level, format: format)
    }
}
