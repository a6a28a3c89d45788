/// The sessions of the limited tenant (`--tenant-key`) open at each second of the run, kept as its
/// changes only: chaos.sh lays it over its Redis outages, during which each node may admit the
/// tenant's whole limit on its own (docs/operations.md, "How tenant limits are counted"). One
/// sample a second at most, and only when the count moved, so a long run stays small.
struct SurviveTenantTimeline: Equatable {
    struct Sample: Equatable {
        let unixSeconds: Int
        let open: Int
    }

    /// A change every second for five hours; past it the highest count is still kept.
    static let maxSamples = 18_000

    private(set) var samples: [Sample] = []
    private(set) var maximum = 0
    private var lastSecond = Int.min

    /// The count at `unixSeconds`; a second already sampled is skipped.
    mutating func sample(at unixSeconds: Int, open: Int) {
        guard unixSeconds > lastSecond else { return }
        lastSecond = unixSeconds
        maximum = max(maximum, open)
        guard samples.last?.open != open, samples.count < Self.maxSamples else { return }
        samples.append(Sample(unixSeconds: unixSeconds, open: open))
    }

    /// The limit may be exceeded during an outage of the shared count by design (each node admits
    /// up to the limit alone); more than three times it is more than three nodes can explain.
    static func exceedsBound(maximum: Int, limit: Int) -> Bool { maximum > 3 * limit }
}
