import ArgumentParser
import Session
import Store

/// Resume, the store, and how long session reports are kept in it (docs/operations.md, "Resume
/// and drain", "Session reports").
struct ResumeOptions: ParsableArguments {
    enum Settings {
        static let graceSeconds = Setting.number("--resume-grace-seconds", "PARLEY_RESUME_GRACE_SECONDS", default: 30, in: Above(lower: 0, upper: 3600),
                                                 about: "How long a resumable session whose client is gone waits for it to reconnect")
        static let storeWaitSeconds = Setting.number("--resume-store-wait-seconds", "PARLEY_RESUME_STORE_WAIT_SECONDS", default: 10, in: AtLeast(lower: 0, upper: 600),
                                                     about: "How long a completed item's event waits for the store to keep the item before the client is told anyway (Redis away); 0 does not wait")
        static let reportDays = Setting.whole("--report-retention-days", "PARLEY_REPORT_RETENTION_DAYS", default: 7, in: 0...3650,
                                              about: "Days a session's report is kept in the store (in memory, the last \(SessionReports.memoryReports), without one); 0 keeps none")
        static let store = Setting<StoreLocation>("--store", "PARLEY_STORE", default: .none, shown: "none", valueName: "store",
                                                  about: "Where resumable sessions' completed items are kept: sqlite:PATH (one node, embedded), redis://HOST:PORT (many nodes), or none, in memory only") { text throws(SettingRejection) in
            do throws(StoreError) {
                return try StoreLocation.parse(text)
            } catch {
                // The store's own message starts with the text, which the refusal already shows.
                let message = "\(error)"
                let prefix = "store '\(text)': "
                throw SettingRejection("is not a store: " + (message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message))
            }
        }
    }

    @Option(Settings.graceSeconds) var graceSeconds: String?
    @Option(Settings.store) var store: String?
    @Option(Settings.reportDays) var reportDays: String?
    @Option(Settings.storeWaitSeconds) var storeWaitSeconds: String?

    typealias Choice = (graceSeconds: Double, store: StoreLocation, storeText: String, reportDays: Int, storeWaitSeconds: Double)

    /// How long a session waits for its client, where its items are kept (not opened yet), and
    /// how long its report is.
    func choice() throws(SettingError) -> Choice {
        (try Settings.graceSeconds.read(graceSeconds), try Settings.store.read(store), Settings.store.text(store) ?? "none",
         try Settings.reportDays.read(reportDays), try Settings.storeWaitSeconds.read(storeWaitSeconds))
    }

    /// The settings, with the store opened.
    static func open(_ choice: Choice) throws(SettingError) -> ResumeSettings {
        do throws(StoreError) {
            var settings = ResumeSettings(graceSeconds: choice.graceSeconds, store: try choice.store.open())
            settings.reportSeconds = choice.reportDays * 86_400
            settings.storeWaitSeconds = choice.storeWaitSeconds
            return settings
        } catch {
            throw Settings.store.refuse(choice.storeText, "cannot be opened: \(error)")
        }
    }
}
