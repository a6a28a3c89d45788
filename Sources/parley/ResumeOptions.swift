import ArgumentParser
import Session

/// Resume and the store (docs/operations.md, "Resume and drain").
struct ResumeOptions: ParsableArguments {
    @Option(name: .customLong("resume-grace-seconds"), help: "How long a resumable session whose client is gone waits for it to reconnect (PARLEY_RESUME_GRACE_SECONDS; default 30).")
    var graceSeconds = Environment.double("PARLEY_RESUME_GRACE_SECONDS") ?? 30

    func validate() throws {
        guard graceSeconds > 0 && graceSeconds <= 3600 else { throw ValidationError("--resume-grace-seconds must be in (0, 3600]") }
    }

    func settings() throws -> ResumeSettings {
        ResumeSettings(graceSeconds: graceSeconds, store: nil)
    }
}
