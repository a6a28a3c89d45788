import Session

/// The sideband WebSockets of a call: each gets the session's events.
struct CallSidebands {
    var sidebands: [ObjectIdentifier: RelayedSocket] = [:]

    func send(text: String) {
        for sideband in sidebands.values { sideband.send(text: text) }
    }

    mutating func closeAll() {
        for sideband in sidebands.values { sideband.close(.normal, reason: "the call ended") }
        sidebands = [:]
    }
}
