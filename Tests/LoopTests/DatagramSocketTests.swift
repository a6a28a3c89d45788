import Glibc
import Testing
@testable import Loop

/// The one datagram read loop (WebRTC's media port, SIP's signalling and RTP ports): on a real
/// loopback socket and a real loop, every datagram reaches `received` with its sender, a pass
/// reads at most its bound and the rest comes after (queued to read again), and a socket closed while it
/// reads stops reading.
@Suite struct DatagramSocketTests {
    final class Counting: DatagramSocket {
        var sizes: [Int] = []
        var senders: Set<Int> = []
        var closeAfter = Int.max
        var passes = 0
        override func received(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) {
            sizes.append(datagram.count)
            senders.insert(sender.port)
            if sizes.count == closeAfter { closeSocket() }
        }
    }

    func bound() throws -> (Int32, SocketAddress) {
        try Sys.boundDatagramSocket(host: .ipv4(127, 0, 0, 1, port: 0), ports: [0])
    }

    /// `count` datagrams of i+1 bytes each from a socket of its own, all in the receiver's buffer
    /// before the loop runs.
    func send(_ count: Int, to address: SocketAddress) throws -> Int32 {
        let (fd, _) = try bound()
        for i in 0..<count {
            let sent = try [UInt8](repeating: 7, count: i % 1_000 + 1).withUnsafeBytes { try Sys.sendDatagram(fd, $0, to: address) }
            #expect(sent)
        }
        return fd
    }

    @Test func everyDatagramArrivesInBoundedPasses() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let (fd, address) = try bound()
        // Few enough to fit the kernel's receive buffer (about 200 KB, each datagram's overhead
        // included) before the loop reads any.
        let socket = try Counting(loop: loop, fd: fd, perPass: 20)
        let sender = try send(60, to: address)
        defer { Sys.close(sender) }
        loop.atEndOfPass {
            socket.passes += 1
            if socket.sizes.count == 60 || socket.passes == 50 { loop.stop() }
        }
        loop.run()
        #expect(socket.sizes == (0..<60).map { $0 + 1 })
        // 20 a read: the socket is edge-triggered and no datagram came after the first edge, so
        // the 40 after the first read arrive only because the read is queued again.
        #expect(socket.senders.count == 1)
        socket.closeSocket()
        socket.closeSocket()
    }

    @Test func aSocketClosedWhileReadingReadsNoMore() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let (fd, address) = try bound()
        let socket = try Counting(loop: loop, fd: fd, perPass: 100)
        socket.closeAfter = 3
        let sender = try send(10, to: address)
        defer { Sys.close(sender) }
        loop.atEndOfPass {
            socket.passes += 1
            if socket.passes == 3 { loop.stop() }
        }
        loop.run()
        #expect(socket.sizes == [1, 2, 3])
    }
}
