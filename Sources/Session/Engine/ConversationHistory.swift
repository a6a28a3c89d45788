import Models
/// The conversation the model sees, within a fixed budget: at most `maxMessages` messages and
/// `maxTextBytes` bytes of text (UTF-8), by default 64 and 32 KiB, so a long session's memory and
/// prompt size stay bounded.
///
/// Over budget, the oldest messages go first, system messages (client-created ones; the session's
/// instructions are kept apart and always sent) only when nothing else is left. After trimming, a
/// leading assistant message (or function output, whose call is gone) goes too, so the model's view still opens with the user. One message
/// longer than the whole text budget is cut to fit (on a character boundary).
struct ConversationHistory: Sendable {
    struct Entry: Sendable {
        var id: String
        var message: ChatMessage
        /// The item's content is audio (a spoken turn, a spoken reply), as `retrieve` shows it.
        var audio = false
    }

    let maxMessages: Int
    let maxTextBytes: Int
    private(set) var entries: [Entry] = []
    private(set) var textBytes = 0
    /// The newest item's id, for `previous_item_id`; kept even after that item is trimmed.
    private(set) var lastItemID: String?

    init(maxMessages: Int = 64, maxTextBytes: Int = 32 * 1024) {
        self.maxMessages = maxMessages
        self.maxTextBytes = maxTextBytes
    }

    var messages: [ChatMessage] { entries.map(\.message) }

    /// Text, ids and the array itself; an approximation of the heap held, for memory accounting.
    var heapBytes: Int {
        textBytes + entries.capacity * MemoryLayout<Entry>.stride + entries.reduce(0) { $0 + ($1.id.utf8.count > 15 ? $1.id.utf8.count : 0) }
    }

    mutating func append(id: String, _ message: ChatMessage, audio: Bool = false) {
        insert(id: id, message, at: entries.count, audio: audio)
    }

    func entry(_ id: String) -> Entry? { entries.last { $0.id == id } }

    /// The id of the item before `id`, nil when it is first (or gone).
    func previousID(of id: String) -> String? {
        guard let index = entries.lastIndex(where: { $0.id == id }), index > 0 else { return nil }
        return entries[index - 1].id
    }

    /// Removes item `id`; false if the conversation does not hold it.
    mutating func delete(_ id: String) -> Bool {
        guard let index = entries.lastIndex(where: { $0.id == id }) else { return false }
        remove(at: index)
        if lastItemID == id { lastItemID = entries.last?.id }
        return true
    }

    /// Where `previous_item_id` puts a new item: first for `"root"`, after the item it names, or
    /// nil when that item is not in the conversation.
    func position(after previousID: String) -> Int? {
        if previousID == "root" { return 0 }
        return entries.lastIndex { $0.id == previousID }.map { $0 + 1 }
    }

    mutating func insert(id: String, _ message: ChatMessage, at index: Int, audio: Bool = false) {
        var message = message
        if message.text.utf8.count > maxTextBytes { message.text = Self.prefix(of: message.text, bytes: maxTextBytes) }
        entries.insert(Entry(id: id, message: message, audio: audio), at: index)
        textBytes += message.text.utf8.count + Self.callBytes(message)
        if index == entries.count - 1 { lastItemID = id }
        trim()
    }

    /// The function call `callID`, if the conversation holds it (its output must answer one).
    func call(_ callID: String) -> ToolCall? {
        for entry in entries.reversed() {
            if let call = entry.message.toolCalls.first(where: { $0.id == callID }) { return call }
        }
        return nil
    }

    /// Gives a function call item its arguments, once the model has written them all.
    mutating func setArguments(_ arguments: String, of id: String) {
        guard let index = entries.lastIndex(where: { $0.id == id }), !entries[index].message.toolCalls.isEmpty else { return }
        textBytes -= Self.callBytes(entries[index].message)
        entries[index].message.toolCalls[0].arguments = arguments
        textBytes += Self.callBytes(entries[index].message)
        trim()
    }

    /// Function calls' names and arguments count against the text budget like text does.
    private static func callBytes(_ message: ChatMessage) -> Int {
        message.toolCalls.reduce(0) { $0 + $1.name.utf8.count + $1.arguments.utf8.count + $1.id.utf8.count }
    }

    /// Gives message `id` its final text: a reply joins the history, empty, when it opens (so
    /// that items added while it streams come after it, as their `previous_item_id` says) and is
    /// filled in when it ends. Nothing happens if it was trimmed meanwhile.
    /// A spoken turn's words arrived: it is a plain user message from now on.
    mutating func setTranscript(_ text: String, of id: String) {
        guard let index = entries.lastIndex(where: { $0.id == id }) else { return }
        entries[index].message.spokenMilliseconds = nil
        setText(text, of: id)
    }

    mutating func setText(_ text: String, of id: String) {
        guard let index = entries.lastIndex(where: { $0.id == id }) else { return }
        let text = text.utf8.count > maxTextBytes ? Self.prefix(of: text, bytes: maxTextBytes) : text
        textBytes += text.utf8.count - entries[index].message.text.utf8.count
        entries[index].message.text = text
        trim()
    }

    private mutating func trim() {
        var trimmed = false
        while entries.count > maxMessages || textBytes > maxTextBytes {
            let victim = entries.firstIndex { $0.message.role != .system } ?? 0
            remove(at: victim)
            trimmed = true
        }
        guard trimmed else { return }
        while let first = entries.firstIndex(where: { $0.message.role != .system }),
              entries[first].message.role == .assistant || entries[first].message.role == .tool, first < entries.count - 1 {
            remove(at: first)
        }
    }

    private mutating func remove(at index: Int) {
        textBytes -= entries[index].message.text.utf8.count + Self.callBytes(entries[index].message)
        entries.remove(at: index)
    }

    /// The longest prefix of `text` of at most `bytes` UTF-8 bytes that ends on a character.
    static func prefix(of text: String, bytes: Int) -> String {
        var count = 0
        var end = text.startIndex
        for character in text {
            let size = character.utf8.count
            guard count + size <= bytes else { break }
            count += size
            end = text.index(after: end)
        }
        return String(text[..<end])
    }
}
