extension SIPMessage {
    /// A response to `request` (RFC 3261 section 8.2.6): its Via fields, From, Call-ID and CSeq
    /// copied, To copied with `toTag` added unless it has one (a 100 gets none, section 8.2.6.2),
    /// the status and its reason. When `source` is given, the top Via is stamped as the server
    /// transport would (`stampingSource`). The caller adds Contact, a body and the rest.
    package static func response(to request: SIPMessage, status: Int, reason: String? = nil, toTag: String? = nil,
                                 source: (host: String, port: UInt16)? = nil) -> SIPMessage {
        let stamped = source.map { request.stampingSource(host: $0.host, port: $0.port) } ?? request
        var response = SIPMessage(.response(status: status, reason: reason ?? SIPStatus.reason(status)))
        for header in stamped.headers where ["Via", "From", "Call-ID", "CSeq"].contains(header.name) {
            response.headers.append(header)
        }
        if let to = stamped.value("To") {
            if status > 100, let toTag, var address = SIPNameAddress(to), address.tag == nil {
                address.tag = toTag
                response.headers.append(SIPHeader("To", address.description))
            } else {
                response.headers.append(SIPHeader("To", to))
            }
        }
        return response
    }

    /// The request with its top Via marked with where it came from (RFC 3261 section 18.2.1):
    /// `received` when the sent-by host is not the source address, and, when the client asked with
    /// an empty `rport`, the source port in it and `received` always (RFC 3581 section 4), so the
    /// response goes back through the NAT the request came through.
    package func stampingSource(host: String, port: UInt16) -> SIPMessage {
        guard let index = headers.firstIndex(where: { $0.name == "Via" }), var via = SIPVia(headers[index].value) else { return self }
        let bareHost = via.host.hasPrefix("[") && via.host.hasSuffix("]") ? String(via.host.dropFirst().dropLast()) : via.host
        if case .some(.none) = via.rport {
            via.parameters.set("rport", String(port))
            via.received = host
        } else if bareHost.lowercased() != host.lowercased() {
            via.received = host
        }
        var stamped = self
        stamped.headers[index].value = via.description
        return stamped
    }
}
