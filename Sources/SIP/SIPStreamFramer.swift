/// Cuts a TCP or TLS byte stream into SIP messages (RFC 3261 section 18.3): messages back to back,
/// each framed by its Content-Length, which a stream message must carry; CRLFs between messages
/// (keep-alives, RFC 5626 section 3.5.1) skipped. Bounded: a header section longer than
/// `SIPMessageParser.maxHeaderBytes` or a body longer than `maxBodyBytes` is an error as soon as
/// it is known, without waiting for the bytes. After an error the stream cannot be resynchronised
/// and the connection should be closed.
package struct SIPStreamFramer: Sendable {
    private var buffer: [UInt8] = []
    /// How far the search for the end of the current header section has looked.
    private var scanned = 0
    private var failed: SIPParseError?
    /// The current message's head, read once while its body is still coming.
    private var pending: (end: Int, head: SIPMessageParser.Head)?

    package init() {}

    /// Bytes held that are not yet a whole message.
    package var bufferedCount: Int { buffer.count }
    /// What the buffer holds of the heap, for the loop's memory account.
    package var heapBytes: Int { buffer.capacity }

    package mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, or nil until more bytes come.
    package mutating func next() throws(SIPParseError) -> SIPMessage? {
        if let failed { throw failed }
        do throws(SIPParseError) {
            return try extract()
        } catch {
            failed = error
            throw error
        }
    }

    private mutating func extract() throws(SIPParseError) -> SIPMessage? {
        if let pending { return try complete(end: pending.end, head: pending.head) }
        var start = 0
        while start < buffer.count, buffer[start] == 0x0D || buffer[start] == 0x0A { start += 1 }
        if start > 0 {
            // A lone CR might be half of a CRLF: keep it for the next read.
            let keep = start == buffer.count && buffer.last == 0x0D ? 1 : 0
            buffer.removeFirst(start - keep)
            scanned = 0
            if keep == 1 { return nil }
        }
        guard !buffer.isEmpty else { return nil }
        guard let end = SIPMessageParser.headEnd(buffer, from: max(0, scanned - 3), limit: SIPMessageParser.maxHeaderBytes, start: 0) else {
            if buffer.count > SIPMessageParser.maxHeaderBytes + 4 { throw .headerSectionTooLarge(limit: SIPMessageParser.maxHeaderBytes) }
            scanned = buffer.count
            return nil
        }
        let head = try SIPMessageParser.parseHead(buffer[0..<end])
        guard let length = head.contentLength else { throw .contentLengthRequired }
        guard length <= SIPMessageParser.maxBodyBytes else { throw .bodyTooLarge(limit: SIPMessageParser.maxBodyBytes) }
        return try complete(end: end, head: head)
    }

    private mutating func complete(end: Int, head: SIPMessageParser.Head) throws(SIPParseError) -> SIPMessage? {
        let total = end + 4 + (head.contentLength ?? 0)
        guard buffer.count >= total else {
            pending = (end, head)
            return nil
        }
        let message = SIPMessage(head.startLine, headers: head.headers, body: Array(buffer[(end + 4)..<total]))
        buffer.removeFirst(total)
        scanned = 0
        pending = nil
        try message.validate()
        return message
    }
}
