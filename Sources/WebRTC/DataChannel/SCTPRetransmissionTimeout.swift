/// The retransmission timeout and its estimate of the round trip (RFC 9260 section 6.3.1), in
/// nanoseconds.
struct SCTPRetransmissionTimeout {
    let initial: UInt64
    let minimum: UInt64
    let maximum: UInt64
    private var smoothed: UInt64?
    private var variation: UInt64 = 0
    private(set) var value: UInt64

    init(initial: UInt64, minimum: UInt64, maximum: UInt64) {
        self.initial = initial
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        value = min(max(initial, minimum), self.maximum)
    }

    /// C1–C3: a new measurement R. The first sets SRTT = R and RTTVAR = R/2; later ones move
    /// them by RTO.Alpha = 1/8 and RTO.Beta = 1/4; RTO = SRTT + 4 RTTVAR, within [min, max].
    mutating func measured(_ rtt: UInt64) {
        let rtt = min(rtt, maximum)
        if let srtt = smoothed {
            let difference = srtt > rtt ? srtt - rtt : rtt - srtt
            variation = variation - variation / 4 + difference / 4
            smoothed = srtt - srtt / 8 + rtt / 8
        } else {
            smoothed = rtt
            variation = rtt / 2
        }
        value = min(max((smoothed ?? rtt) + 4 * variation, minimum), maximum)
    }

    /// E2: on a timer's expiry the timeout doubles, up to RTO.Max.
    mutating func backOff() {
        value = min(value > maximum / 2 ? maximum : value * 2, maximum)
    }
}
