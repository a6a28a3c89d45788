/// A run that cannot go on, with the sentence that tells the person why. ArgumentParser prints it
/// as "Error: …" and exits with status 1.
struct LoadFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// The server could not be reached: say so, and what to start.
    static func unreachable(_ error: ServerMetrics.Unreachable, _ target: LoadTarget) -> LoadFailure {
        LoadFailure("\(error). Is the server running (e.g. `parley serve --host \(target.hostText.trimmingCharacters(in: "[]")) --port \(target.port)`)?")
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
