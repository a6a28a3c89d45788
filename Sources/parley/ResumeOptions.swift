import ArgumentParser
import Session
import Store

/// Resume and the store (docs/operations.md, "Resume and drain").
struct ResumeOptions: ParsableArguments {
    enum Settings {
        static let graceSeconds = Setting.number("--resume-grace-seconds", "PARLEY_RESUME_GRACE_SECONDS", default: 30, in: Above(lower: 0, upper: 3600),
                                                 about: "How long a resumable session whose client is gone waits for it to reconnect")
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

    /// How long a session waits for its client, and where its items are kept (not opened yet).
    func choice() throws(SettingError) -> (graceSeconds: Double, store: StoreLocation, storeText: String) {
        (try Settings.graceSeconds.read(graceSeconds), try Settings.store.read(store), Settings.store.text(store) ?? "none")
    }

    /// The settings, with the store opened.
    static func open(_ choice: (graceSeconds: Double, store: StoreLocation, storeText: String)) throws(SettingError) -> ResumeSettings {
        do throws(StoreError) {
            return ResumeSettings(graceSeconds: choice.graceSeconds, store: try choice.store.open())
        } catch {
            throw Settings.store.refuse(choice.storeText, "cannot be opened: \(error)")
        }
    }
}
