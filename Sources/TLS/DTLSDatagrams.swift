/// Splits what OpenSSL wrote to an endpoint's memory BIO into datagrams. A memory BIO keeps no
/// datagram boundaries, but each DTLS record says its own length (RFC 6347 section 4.1: a 13-byte
/// header ending in a 16-bit length), and OpenSSL sizes every record to the MTU it was given; so
/// whole records are packed, in order, into datagrams of at most `mtu` bytes, several to a
/// datagram where they fit (RFC 6347 section 4.1.1 allows it), and a record is never split.
enum DTLSDatagrams {
    static let recordHeaderLength = 13

    static func split(_ bytes: UnsafeRawBufferPointer, mtu: Int) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        var start = 0, end = 0
        while end < bytes.count {
            let recordEnd: Int
            if bytes.count - end >= recordHeaderLength {
                let length = Int(bytes[end + 11]) << 8 | Int(bytes[end + 12])
                recordEnd = min(bytes.count, end + recordHeaderLength + length)
            } else {
                // Never from OpenSSL; kept whole rather than dropped.
                recordEnd = bytes.count
            }
            if recordEnd - start > mtu && end > start {
                datagrams.append(Array(bytes[start..<end]))
                start = end
            }
            end = recordEnd
        }
        if end > start { datagrams.append(Array(bytes[start..<end])) }
        return datagrams
    }
}
