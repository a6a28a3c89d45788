import Glibc
import Testing
@testable import Loop

struct DatagramTests {
    /// Two loopback UDP sockets: a datagram goes from one to the other with its sender's address,
    /// an empty socket reads nil rather than blocking, and an address's host bytes make it again.
    @Test func aDatagramArrivesWithItsSender() throws {
        let a = try Sys.datagramSocket(family: AF_INET)
        let b = try Sys.datagramSocket(family: AF_INET)
        defer { Sys.close(a); Sys.close(b) }
        try Sys.bindDatagram(a, to: .ipv4(127, 0, 0, 1, port: 0))
        try Sys.bindDatagram(b, to: .ipv4(127, 0, 0, 1, port: 0))
        let bAddress = try Sys.localAddress(b)
        let aAddress = try Sys.localAddress(a)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1_500, alignment: 8)
        defer { buffer.deallocate() }
        var sender = SocketAddress()
        #expect(try Sys.receiveDatagram(b, into: buffer, from: &sender) == nil)
        let sent = try [UInt8]("hello".utf8).withUnsafeBytes { try Sys.sendDatagram(a, $0, to: bAddress) }
        #expect(sent)
        var received: Int?
        for _ in 0..<100 where received == nil {
            received = try Sys.receiveDatagram(b, into: buffer, from: &sender)
            if received == nil { usleep(1_000) }
        }
        #expect(received == 5)
        #expect(Array(buffer.prefix(5)) == Array("hello".utf8))
        #expect(sender.port == aAddress.port && sender.hostBytes == [127, 0, 0, 1])
        #expect(SocketAddress.ip(sender.hostBytes, port: UInt16(sender.port))?.description == aAddress.description)
        #expect(SocketAddress.ip([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], port: 9)?.description == "[::1]:9")
        #expect(SocketAddress.ip([1, 2, 3], port: 9) == nil)
    }
}
