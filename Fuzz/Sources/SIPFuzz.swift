@testable import SIP

/// SIP messages as the transport will take them: the input (after its first byte, which cuts it
/// into reads, `Reads`) as one UDP datagram, and as a TCP stream through `SIPStreamFramer`. Checks
/// that every message read writes back to canonical bytes that read as the same message, as a
/// datagram and as a stream; that a response built from any request read parses to itself; that the
/// framer holds no more than its bounds; and that every refusal can be described.
enum SIPFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let reads = Reads(input)
        do {
            check(try SIPMessage(datagram: Array(reads.stream)))
        } catch {
            precondition(!error.description.isEmpty)
        }
        var framer = SIPStreamFramer()
        reading: for read in reads.reads {
            framer.append(read)
            precondition(framer.bufferedCount <= read.count + SIPMessageParser.maxHeaderBytes + 4 + SIPMessageParser.maxBodyBytes,
                         "the framer holds \(framer.bufferedCount) bytes")
            while true {
                do {
                    guard let message = try framer.next() else { break }
                    check(message)
                } catch {
                    precondition(!error.description.isEmpty)
                    break reading
                }
            }
        }
    }

    /// The invariants of one message read.
    static func check(_ message: SIPMessage) {
        precondition(message.body.count <= SIPMessageParser.maxBodyBytes, "a body of \(message.body.count) bytes")
        let written = message.encoded()
        // Canonical text can be longer than what came (long names, one line per list element):
        // only a head within the bound must read back.
        guard written.count - message.body.count - 4 <= SIPMessageParser.maxHeaderBytes else { return }
        precondition((try? SIPMessage(datagram: written)) == message, "the message does not read back from its canonical text")
        var framer = SIPStreamFramer()
        framer.append(written)
        precondition((try? framer.next()) == message, "the message does not read back from a stream")
        guard message.isRequest else { return }
        let response = SIPMessage.response(to: message, status: 200, toTag: "fuzz", source: (host: "192.0.2.1", port: 5062))
        let built = response.encoded()
        guard built.count - 4 <= SIPMessageParser.maxHeaderBytes else { return }
        precondition((try? SIPMessage(datagram: built)) == response, "the response built from a request does not parse")
        let branch = try? message.topVia().branch
        precondition(branch == nil || SIPTransactionKey.client(for: response) != nil, "the response matches no transaction")
    }
}
