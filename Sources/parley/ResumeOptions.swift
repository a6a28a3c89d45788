import ArgumentParser
import Session
import Store

/// Resume and the store (docs/operations.md, "Resume and drain").
struct ResumeOptions: ParsableArguments {
    @Option(name: .customLong("resume-grace-seconds"), help: "How long a resumable session whose client is gone waits for it to reconnect (PARLEY_RESUME_GRACE_SECONDS; default 30).")
    var graceSeconds = Environment.double("PARLEY_RESUME_GRACE_SECONDS") ?? 30

    @Option(name: .customLong("store"), help: ArgumentHelp("Where resumable sessions' completed items are kept: sqlite:PATH (one node, embedded), redis://HOST:PORT (many nodes), or none, in memory only (PARLEY_STORE; default none).", valueName: "store"))
    var storeFlag: String?
    var store: String { storeFlag ?? Environment.string("PARLEY_STORE") ?? "none" }

    func validate() throws {
        guard graceSeconds > 0 && graceSeconds <= 3600 else { throw ValidationError("--resume-grace-seconds must be in (0, 3600]") }
    }

    func settings() throws -> ResumeSettings {
        do throws(StoreError) {
            return ResumeSettings(graceSeconds: graceSeconds, store: try StoreLocation.parse(store).open())
        } catch {
            throw ValidationError("--store \(store): \(error)")
        }
    }
}
