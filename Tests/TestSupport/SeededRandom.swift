/// SplitMix64: a small deterministic generator, so a failing fuzz case can be replayed from its seed.
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// `bytes` with a few bytes overwritten at random places.
    public mutating func mutate(_ bytes: [UInt8], flips: Int) -> [UInt8] {
        var out = bytes
        for _ in 0..<flips where !out.isEmpty { out[Int.random(in: 0..<out.count, using: &self)] = UInt8.random(in: 0...255, using: &self) }
        return out
    }
}
