import Glibc

/// RFC 4475's torture messages, byte for byte as the RFC's archive holds them (section 4), in
/// Tests/SIPTests/Fixtures/<name>.dat.
enum Fixture {
    static func bytes(_ name: String) -> [UInt8] {
        let directory = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard let file = fopen("\(directory)/Fixtures/\(name).dat", "rb") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }

    /// The valid messages of RFC 4475 section 3.1.1, in its order.
    static let valid = ["wsinv", "intmeth", "esc01", "escnull", "esc02", "lwsdisp", "longreq", "dblreq", "semiuri", "transports", "mpart01", "unreason", "noreason"]

    /// Messages of sections 3.2 to 3.4 that are well formed (their trouble is in meaning).
    static let semantic = ["badbranch", "zeromf", "cparam01", "cparam02", "regescrt", "unkscm", "unksm2", "bext01", "invut", "regaut01", "bcast", "novelsc", "inv2543", "sdp01"]
}

/// A message as text with CRLF line ends, for tests that write their own.
func sip(_ lines: String...) -> [UInt8] {
    Array(lines.map { $0 + "\r\n" }.joined().utf8)
}
