/// xoshiro256** seeded from the system generator. Masking keys and handshake keys are drawn here:
/// RFC 6455 asks for unpredictable masks to protect proxies from cache poisoning, and over loopback
/// to our own server there is no proxy, while a getrandom(2) call per frame would cost the client
/// CPU that the echo test must not spend.
struct FastRandom: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init() {
        var system = SystemRandomNumberGenerator()
        s = (system.next(), system.next(), system.next(), system.next() | 1)
    }

    /// Seeded (SplitMix64 spreads the seed over the state), for what a run must repeat: the same
    /// noise, the same texts.
    init(seed: UInt64) {
        var z = seed
        func mix() -> UInt64 {
            z &+= 0x9E37_79B9_7F4A_7C15
            var x = z
            x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
            x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
            return x ^ (x >> 31)
        }
        s = (mix(), mix(), mix(), mix() | 1)
    }

    mutating func next() -> UInt64 {
        let result = rotate(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotate(s.3, 45)
        return result
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }
}
