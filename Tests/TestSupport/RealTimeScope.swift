import Glibc
import Synchronization
import Testing

/// How much of the suites that stream speech in real time a run covers, and how they ride out a
/// starved CPU.
///
/// `make test` runs a short scope: of each matrix, the cases that cover every branch once (each
/// decision, each endpoint, each detector, each line); `make test-realtime` sets
/// PARLEY_TEST_SCOPE=full and runs every voice and speed. Measured: the four real-time suites took
/// 257 s of `make test`'s 22 minutes in full, and one case in about three CI runs failed there.
public enum RealTimeScope {
    /// Whether PARLEY_TEST_SCOPE=full asks for every case.
    public static let isFull = getenv("PARLEY_TEST_SCOPE").map { String(cString: $0) == "full" } ?? false

    /// `all` under the full scope, else the cases at `short`.
    public static func cases<T>(_ all: [T], short: [Int]) -> [T] {
        isFull ? all : short.map { all[$0] }
    }

    /// Runs `attempt`, and once more if it recorded an issue, under the short scope only: these
    /// cases assert outcomes (a reply cut or not, one turn or two), but an outcome rests on audio
    /// handled as it arrives, and on two shared cores a starved moment can lose one (a cold CI
    /// machine failed one case in 13 once; the same case passed run after run here). The first
    /// attempt's failures stay in the log as known issues; a second failure fails the test. The
    /// full scope (`make test-realtime`) does not retry, so its failures are the true rate.
    public static func retriedOnce(_ what: String, _ attempt: () throws -> Void) rethrows {
        guard !isFull else { return try attempt() }
        let failed = Atomic(false)
        try withKnownIssue("\(what): a first attempt on a starved CPU; a second follows", isIntermittent: true) {
            try attempt()
        } matching: { _ in
            failed.store(true, ordering: .relaxed)
            return true
        }
        if failed.load(ordering: .relaxed) { try attempt() }
    }
}
