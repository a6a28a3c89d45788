import ArgumentParser
import Logging
import Loop

/// `--log-level` and `--log-format`: what goes to stderr, and in which shape.
struct LogOptions: ParsableArguments {
    enum Settings {
        static let level = Setting.choice("--log-level", "PARLEY_LOG_LEVEL", default: Logger.Level.info, shown: "info",
                                          among: Logger.Level.allCases.map { ($0.rawValue, $0) },
                                          about: "Least severe log lines written to stderr: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        static let format = Setting.choice("--log-format", "PARLEY_LOG_FORMAT", default: StderrLogHandler.Format.logfmt, shown: "logfmt",
                                           among: StderrLogHandler.Format.allCases.map { ($0.rawValue, $0) },
                                           about: "Log lines as logfmt (key=value) or json, one per line on stderr")
    }

    @Option(Settings.level) var logLevel: String?
    @Option(Settings.format) var logFormat: String?

    /// Sends every Logger in the process to stderr in this shape; once, before anything logs.
    func bootstrap() throws(SettingError) {
        StderrLogHandler.bootstrap(level: try Settings.level.read(logLevel), format: try Settings.format.read(logFormat))
    }
}
