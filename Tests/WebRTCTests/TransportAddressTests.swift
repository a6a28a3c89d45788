import Media
import Testing
@testable import WebRTC

struct TransportAddressTests {
    @Test func ipv4IsWrittenDotted() {
        #expect(TransportAddress.ipv4(192, 0, 2, 1, port: 32853).description == "192.0.2.1:32853")
        #expect(TransportAddress(octets: [10, 0, 0, 1], port: 80) == .ipv4(10, 0, 0, 1, port: 80))
        #expect(TransportAddress.ipv4(10, 0, 0, 1, port: 80).octets == [10, 0, 0, 1])
    }

    /// RFC 5952 section 4.2: the longest run of zero groups is "::", the first on a tie, and a
    /// single zero group is not shortened.
    @Test func ipv6IsWrittenInRFC5952Form() {
        func text(_ high: UInt64, _ low: UInt64) -> String { TransportAddress(ip: .v6(high: high, low: low), port: 1).description }
        #expect(text(0, 1) == "[::1]:1")
        #expect(text(0x2001_0DB8_0000_0000, 1) == "[2001:db8::1]:1")
        #expect(text(0x0001_0000_0000_0001, 0x0000_0000_0000_0001) == "[1:0:0:1::1]:1")
        #expect(text(0x2001_0DB8_0000_0001, 0x0001_0001_0001_0001) == "[2001:db8:0:1:1:1:1:1]:1")
        #expect(text(0, 0) == "[::]:1")
    }

    @Test func ipv6OctetsRoundTrip() {
        let octets: [UInt8] = Array(1...16)
        #expect(TransportAddress(octets: octets, port: 5)?.octets == octets)
        #expect(TransportAddress(octets: [1, 2, 3], port: 5) == nil)
    }
}
