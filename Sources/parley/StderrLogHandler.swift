import JSON
import Logging
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Parley's swift-log handler: one line per event on stderr, as logfmt (`ts=… level=info
/// msg="session opened" session=sess_…`) for people and grep, or as JSON for collectors. Each line
/// goes out in one write(2), so the loops' lines never interleave and nothing is buffered that a
/// crash could lose.
///
/// Secrets never come here by design (nothing logs a header, a key or a token); as a second line of
/// defence, a metadata value whose key names a secret is written as `[redacted]`.
public struct StderrLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable { case logfmt, json }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: Format

    public init(label: String, level: Logger.Level, format: Format) {
        self.label = label
        logLevel = level
        self.format = format
    }

    /// Makes every `Logger` in the process write through this handler; call once at start-up.
    public static func bootstrap(level: Logger.Level, format: Format) {
        LoggingSystem.bootstrap { label in StderrLogHandler(label: label, level: level, format: format) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        var line = Self.line(time: Self.timestamp(), level: event.level, label: label, message: Self.scrub(event.message.description),
                             metadata: fields, format: format)
        line.withUTF8 { Sys.writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    // MARK: Formatting (pure, for the tests)

    /// Keys whose values are never written, whatever logs them.
    static let secretKeys = ["authorization", "api_key", "apikey", "api-key", "token", "secret", "password", "key"]

    static func isSecret(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return secretKeys.contains { lowered == $0 || lowered.hasSuffix("_" + $0) || lowered.hasSuffix("-" + $0) }
    }

    static func scrub(_ text: String) -> String { Secrets.scrub(text) }

    /// One line, newline included; metadata in key order, so lines are stable.
    static func line(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, format: Format) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { ($0.key, isSecret($0.key) ? "[redacted]" : scrub("\($0.value)")) }
        switch format {
        case .logfmt:
            var out = "ts=\(time) level=\(level.rawValue) logger=\(logfmtValue(label)) msg=\(logfmtValue(message))"
            for (key, value) in fields { out += " \(logfmtKey(key))=\(logfmtValue(value))" }
            return out + "\n"
        case .json:
            var out = "{\"ts\":\(jsonString(time)),\"level\":\(jsonString(level.rawValue)),\"logger\":\(jsonString(label)),\"msg\":\(jsonString(message))"
            for (key, value) in fields { out += ",\(jsonString(key)):\(jsonString(value))" }
            return out + "}\n"
        }
    }

    /// A logfmt value: bare when it is a plain word, quoted with \" \\ \n escaped otherwise.
    static func logfmtValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0 != "\\" && $0.value != 0x7F }
        if plain { return value }
        // logfmt quotes as JSON does (\" \\ \n \t, other controls as \u00XX): one escaper for both.
        return JSON.quoted(value)
    }

    static func logfmtKey(_ key: String) -> String {
        String(key.unicodeScalars.map { $0.value > 0x20 && $0 != "=" && $0 != "\"" ? Character($0) : "_" })
    }

    static func jsonString(_ value: String) -> String { JSON.quoted(value) }

    /// RFC 3339 UTC with milliseconds, from the wall clock (log lines are read against other logs).
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(now.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }
}
