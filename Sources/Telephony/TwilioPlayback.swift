import Session
/// What the caller has heard of each reply, from Twilio's marks: after each chunk of a reply's
/// audio the server sends a mark naming where that chunk ends, and Twilio echoes a mark once the
/// audio before it has played. So the last mark echoed is how far the caller really heard, which
/// is where an interrupted reply is cut in the history (an agent must not "remember" saying what
/// the caller never heard). A value: sends and echoes in, names and positions out.
struct TwilioPlayback {
    private struct Pending {
        let name: String
        let responseID: String
        let endMs: Int
    }

    /// Marks sent and not yet echoed, oldest first.
    private var pending: [Pending] = []
    private var pendingHead = 0
    /// Per reply: audio sent (ms), and heard as the echoes say.
    private var sentMs: [String: Int] = [:]
    private var heardMs: [String: Int] = [:]
    private var counter = 0

    /// Marks outstanding: what the caller has been sent and not yet heard.
    var outstanding: Int { pending.count - pendingHead }

    /// A chunk of `ms` of `responseID`'s audio was sent; returns the mark to send after it.
    mutating func sent(_ ms: Int, of responseID: String) -> String {
        let end = (sentMs[responseID] ?? 0) + ms
        sentMs[responseID] = end
        counter += 1
        let name = "m\(counter)"
        pending.append(Pending(name: name, responseID: responseID, endMs: end))
        return name
    }

    /// Twilio echoed `name`: everything before it has played. Unknown names (ours from before a
    /// clear, or not ours) change nothing and return false.
    mutating func echoed(_ name: String) -> Bool {
        guard let index = pending[pendingHead...].firstIndex(where: { $0.name == name }) else { return false }
        let mark = pending[index]
        heardMs[mark.responseID] = max(heardMs[mark.responseID] ?? 0, mark.endMs)
        pendingHead = index + 1
        if pendingHead > 64 && pendingHead * 2 > pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        return true
    }

    /// How much of `responseID` the caller heard, by the marks echoed so far.
    func heard(_ responseID: String) -> Int { heardMs[responseID] ?? 0 }

    /// Whether audio is queued at Twilio (sent, not yet echoed).
    var isPlaying: Bool { outstanding > 0 }

    /// The server sent `clear`: Twilio drops what it queued and echoes its marks at once, which
    /// must not count as heard. Returns how many marks were dropped.
    mutating func cleared() -> Int {
        let dropped = outstanding
        pending.removeAll(keepingCapacity: true)
        pendingHead = 0
        return dropped
    }

    /// The reply's audio from `ms` on will be sent again (after a `clear`): marks count from there.
    mutating func rewind(_ responseID: String, toMs ms: Int) {
        sentMs[responseID] = ms
    }

    /// A new reply began: earlier replies' positions are no longer needed.
    mutating func forgetAll(except responseID: String) {
        sentMs = sentMs.filter { $0.key == responseID }
        heardMs = heardMs.filter { $0.key == responseID }
    }
}
