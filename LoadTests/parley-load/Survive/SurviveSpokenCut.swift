/// A spoken reply the client cut, as a push-to-talk client whose user pressed stop: once 300 ms of
/// its audio had arrived, `response.cancel`, then `conversation.item.truncate` at the audio it had
/// received (rounded down to the millisecond). What the server must do about it, checked here as
/// values: the response ends `cancelled` (or `completed`, when it had finished before the cancel
/// came; the truncation still applies), `conversation.item.truncated` comes back with our
/// `audio_end_ms`, no truncation of the item claims more audio than the client received, and the
/// item's transcript, right after the cut and at the end of the run, is no longer than what was
/// streamed for it and is a word prefix of it.
struct SurviveSpokenCut: Equatable {
    /// The audio a reply must have sent before it is cut.
    static let afterMs = 300
    /// A reply's transcript is a few sentences; past this it is not kept growing.
    static let maxTranscriptCharacters = 8192

    let itemID: String
    let responseID: String?
    /// What the truncate said: the audio received when the user pressed stop.
    let audioEndMs: Int
    /// The reply's transcript as streamed (deltas, or its `.done`, whichever is longer).
    private(set) var streamed: String
    /// The audio received for the item so far, at 24 kHz (more may arrive after the cancel).
    var receivedSamples: Int
    var receivedMs: Int { receivedSamples / 24 }
    var cancelAcknowledged = false
    var status: String?
    var truncateEchoed = false
    /// The transcript the server held right after the cut (a retrieve sent once the truncate was
    /// echoed), which it must keep from then on, across resumes too.
    var afterCut: String?
    var retrieveSent = false
    var checkedAtEnd = false
    /// The truncate went out again after a resume.
    var resent = false
    /// The server no longer had the item when the truncate came again after a resume: its node
    /// ended before the reply did, and the turn was answered anew (docs/protocol.md, "Resume").
    var voided = false

    /// Waiting on the server: the truncate's echo, or the retrieve after it.
    var pending: Bool { !voided && (!truncateEchoed || afterCut == nil) }

    init(itemID: String, responseID: String?, receivedSamples: Int, streamed: String) {
        self.itemID = itemID
        self.responseID = responseID
        audioEndMs = receivedSamples / 24
        self.receivedSamples = receivedSamples
        self.streamed = streamed
    }

    /// A transcript delta that came after the cut (text runs ahead of the audio).
    mutating func heard(_ delta: String) {
        if streamed.count + delta.count <= Self.maxTranscriptCharacters { streamed += delta }
    }

    /// The whole transcript (its `.done`, or the item in `response.done`): kept when it says more
    /// than the deltas did (after a resume from the store, they are not replayed).
    mutating func streamedWhole(_ transcript: String) {
        if TranscriptCut.words(transcript).count > TranscriptCut.words(streamed).count {
            streamed = String(transcript.prefix(Self.maxTranscriptCharacters))
        }
    }

    /// Whether the reply's audio reached the point to cut it.
    static func due(receivedMs: Int) -> Bool { receivedMs >= afterMs }

    /// How a cut response may end: cancelled by us, or completed first (the race is the client's).
    static func acceptable(status: String) -> Bool { status == "cancelled" || status == "completed" }

    /// A truncation of the item (ours echoed, or the server's own after its cancel) must not say
    /// the client played more than it received.
    static func withinReceived(audioEndMs: Int, receivedMs: Int) -> Bool { audioEndMs <= receivedMs }

    /// A retrieved transcript beside the streamed one.
    func verdict(retrieved: String) -> TranscriptCut.Verdict {
        TranscriptCut.verdict(kept: retrieved, streamed: streamed)
    }

    /// The transcript at the end beside the one right after the cut: a truncation the server
    /// forgot (a resume from the store that brought back the whole reply) shows as a longer one.
    func kept(final: String) -> Bool {
        guard let afterCut else { return true }
        return TranscriptCut.words(final).count <= TranscriptCut.words(afterCut).count
    }
}

/// A truncated transcript beside the transcript streamed for the reply. The server keeps the part
/// of the text that was heard, cut back to the end of a word (docs/protocol.md,
/// "conversation.item.truncate"): so its words must be the streamed transcript's first words.
/// Words are compared lowercased, without punctuation, since the server may join the sentences it
/// spoke with other spacing than the model's.
enum TranscriptCut {
    enum Verdict: Equatable {
        /// The kept words are the first words streamed (all of them, when nothing was cut).
        case prefix
        /// More words than were streamed.
        case longer
        /// No more words, but not the streamed ones in order.
        case notWordPrefix
    }

    static func verdict(kept: String, streamed: String) -> Verdict {
        let keptWords = words(kept), streamedWords = words(streamed)
        guard keptWords.count <= streamedWords.count else { return .longer }
        return Array(streamedWords.prefix(keptWords.count)) == keptWords ? .prefix : .notWordPrefix
    }

    /// Lowercased words of letters and digits; apostrophes are dropped ("it's" is "its"), any other
    /// character separates.
    static func words(_ text: String) -> [Substring] {
        let bare = String(text.lowercased().filter { $0 != "'" && $0 != "’" })
        return bare.split { !($0.isLetter || $0.isNumber) }
    }
}
