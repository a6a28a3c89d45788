import ArgumentParser
import Loop
import Session

/// Call recording (docs/operations.md, "Recordings"): off unless a directory is given, and then
/// only for sessions that ask (`recording: true`).
struct RecordingOptions: ParsableArguments {
    enum Settings {
        static let directory = Setting.text("--recordings", "PARLEY_RECORDINGS", shown: "off", valueName: "dir",
                                            about: "A directory to record calls in (stereo Ogg Opus, caller left and agent right, <session id>.opus), for sessions that ask with recording: true; without it, no session may be recorded")
        static let retentionDays = Setting.whole("--recording-retention-days", "PARLEY_RECORDING_RETENTION_DAYS", default: Int(Recordings.defaultRetentionDays),
                                                 in: 1...3650, about: "Days a recording is kept before it is deleted (checked hourly)")
    }

    @Option(Settings.directory) var directory: String?
    @Option(Settings.retentionDays) var retentionDays: String?

    typealias Choice = (directory: String?, retentionDays: Int)

    func choice() throws(SettingError) -> Choice {
        (try Settings.directory.read(directory), try Settings.retentionDays.read(retentionDays))
    }

    /// The recordings directory made ready (created if missing), or nil when recording is off.
    static func open(_ choice: Choice) throws(SettingError) -> Recordings? {
        guard let directory = choice.directory else { return nil }
        do throws(SystemError) {
            return try Recordings(directory: directory, retentionDays: Double(choice.retentionDays))
        } catch {
            throw Settings.directory.refuse(directory, "cannot be used: \(error)")
        }
    }
}
