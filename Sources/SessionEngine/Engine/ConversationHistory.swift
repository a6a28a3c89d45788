import Models

/// The conversation the model sees, and all a session holds of it, within a budget: at most
/// `maxMessages` messages and `maxBytes` of text (`--max-history-bytes`, 32 KiB by default; a
/// session may ask for less), and, where the model is known, its context in estimated tokens.
///
/// Over budget, the session's `truncation` (the Realtime API's GA setting) decides:
/// - `auto`: the oldest messages go until the conversation fits;
/// - `retention_ratio`: the oldest go until the conversation is at most that fraction of the
///   budget, so that truncation happens seldom and the prompt's prefix (what providers cache)
///   stays the same for longer;
/// - `disabled`: nothing goes; a response asked for meanwhile fails (`context_length_exceeded`)
///   and the client deletes items. Memory stays bounded all the same: at twice the budget the
///   oldest go anyway.
///
/// System messages (client-created ones; the session's instructions are kept apart and always
/// sent) go only when nothing else is left. After trimming, a leading assistant message (or
/// function output, whose call is gone) goes too, so the model's view still opens with the user.
/// One message longer than the whole text budget is cut to fit (on a character boundary).
///
/// Memory: every message's id and text are bytes in one buffer, and a message is a 32-byte slot
/// into it (function calls, which are rare, in a box of their own), rather than a struct of three
/// strings with a heap object each. The buffer grows by an eighth and is compacted when an
/// eighth of it is dead. A message costs its text, its id and 32 bytes; the soak's history (64
/// messages, 6 KiB of text) cost about 3× its text as strings (docs/benchmarks.md, "A session's
/// history").
package struct ConversationHistory: Sendable {
    /// One item as the engine reads it (made on demand from the buffer).
    package struct Entry: Sendable {
        package var id: String
        package var message: ChatMessage
        /// The item's content is audio (a spoken turn, a spoken reply), as `retrieve` shows it.
        package var audio = false

        package init(id: String, message: ChatMessage, audio: Bool = false) {
            self.id = id
            self.message = message
            self.audio = audio
        }
    }

    package struct Budget: Sendable, Equatable {
        package var maxMessages = 64
        package var maxBytes = SessionLimits().maxHistoryBytes
        /// The model's context for the conversation (after the instructions), in estimated tokens
        /// (`Usage.estimatedTokens`); nil: the bytes alone bound it.
        package var maxTokens: Int?
        package var truncation = SessionConfiguration.Truncation.auto
    }

    /// A function call or a function's output: the parts of a message few have.
    private final class Calls: Sendable {
        package let toolCalls: [ToolCall]
        package let toolCallID: String?

        package init(_ toolCalls: [ToolCall], _ toolCallID: String?) {
            self.toolCalls = toolCalls
            self.toolCallID = toolCallID
        }

        /// Names, ids and arguments count against the text budget like text does.
        package var bytes: Int { toolCalls.reduce(0) { $0 + $1.name.utf8.count + $1.arguments.utf8.count + $1.id.utf8.count } }
    }

    /// One message: where its id and text are in `bytes`, and what else it is.
    private struct Slot: Sendable {
        package var idStart: UInt32
        package var textStart: UInt32
        package var textCount: UInt32
        /// A spoken turn not (yet) transcribed: how long it lasted; -1 otherwise.
        package var spokenMs: Int32
        package var idCount: UInt8
        package var role: ChatMessage.Role
        package var audio: Bool
        package var calls: Calls?

        package var idRange: Range<Int> { Int(idStart)..<Int(idStart) + Int(idCount) }
        package var textRange: Range<Int> { Int(textStart)..<Int(textStart) + Int(textCount) }
        package var budgetBytes: Int { Int(textCount) + (calls?.bytes ?? 0) }
        /// As `Usage.estimatedInputTokens` counts a message.
        package var tokens: Int { Usage.estimatedTokens(bytes: budgetBytes) + Usage.tokensPerMessage }
    }

    private(set) var budget: Budget
    private var slots: [Slot] = []
    /// Every slot's id and text, and dead bytes of removed or rewritten ones until compacted.
    private var bytes: [UInt8] = []
    private var deadBytes = 0
    /// Text and calls held, as the budget counts them, and their estimated tokens.
    private(set) var textBytes = 0
    private(set) var tokens = 0
    /// What the call boxes hold, counted as messages come and go (`heapBytes` is read every frame).
    private var callBoxBytes = 0
    /// The newest item's id, for `previous_item_id`; kept even after that item is trimmed.
    private(set) var lastItemID: String?
    /// Messages truncation dropped since `takeTruncated`.
    private var truncated = 0

    package init(budget: Budget = Budget()) {
        self.budget = budget
    }

    package var count: Int { slots.count }
    package var messages: [ChatMessage] { slots.map(message) }
    package var last: Entry? { slots.last.map(entry) }
    package func id(at index: Int) -> String { id(of: slots[index]) }

    /// The conversation is over its budget and truncation is disabled: the model cannot be asked.
    package var exceedsBudget: Bool { budget.truncation == .disabled && over(1) }

    /// The buffer, the slots and the call boxes: what the history holds on the heap, for the
    /// connection's memory account.
    package var heapBytes: Int {
        bytes.capacity + slots.capacity * MemoryLayout<Slot>.stride + (lastItemID.map { $0.utf8.count > 15 ? 32 + $0.utf8.count : 0 } ?? 0)
            + callBoxBytes
    }

    /// A new budget (the session's settings changed): trimmed to it at once.
    package mutating func setBudget(_ new: Budget) {
        budget = new
        trim()
    }

    /// How many messages truncation has dropped since last asked.
    package mutating func takeTruncated() -> Int {
        defer { truncated = 0 }
        return truncated
    }

    package mutating func append(id: String, _ message: ChatMessage, audio: Bool = false) {
        insert(id: id, message, at: slots.count, audio: audio)
    }

    package func entry(_ id: String) -> Entry? { index(of: id).map { entry(slots[$0]) } }

    /// The id of the item before `id`, nil when it is first (or gone).
    package func previousID(of id: String) -> String? {
        guard let index = index(of: id), index > 0 else { return nil }
        return self.id(of: slots[index - 1])
    }

    /// Removes item `id`; false if the conversation does not hold it.
    package mutating func delete(_ id: String) -> Bool {
        guard let index = index(of: id) else { return false }
        remove(at: index)
        if lastItemID == id { lastItemID = slots.last.map(self.id(of:)) }
        return true
    }

    /// Where `previous_item_id` puts a new item: first for `"root"`, after the item it names, or
    /// nil when that item is not in the conversation.
    package func position(after previousID: String) -> Int? {
        if previousID == "root" { return 0 }
        return index(of: previousID).map { $0 + 1 }
    }

    package mutating func insert(id: String, _ message: ChatMessage, at index: Int, audio: Bool = false) {
        let text = message.text.utf8.count > budget.maxBytes ? Self.prefix(of: message.text, bytes: budget.maxBytes) : message.text
        let idStart = store(id.utf8, then: text.utf8)
        let calls = message.toolCalls.isEmpty && message.toolCallID == nil ? nil : Calls(message.toolCalls, message.toolCallID)
        let slot = Slot(idStart: idStart, textStart: idStart + UInt32(id.utf8.count), textCount: UInt32(text.utf8.count),
                        spokenMs: message.spokenMilliseconds.map { Int32(clamping: $0) } ?? -1, idCount: UInt8(id.utf8.count),
                        role: message.role, audio: audio, calls: calls)
        // Grown by half, to one past the message budget at most (the one trimmed at once), not doubled.
        if slots.count == slots.capacity { slots.reserveCapacity(min(max(4, slots.count * 3 / 2), budget.maxMessages + 1)) }
        slots.insert(slot, at: index)
        count(slot, +1)
        if index == slots.count - 1 { lastItemID = id }
        trim()
    }

    /// The function call `callID`, if the conversation holds it (its output must answer one).
    package func call(_ callID: String) -> ToolCall? {
        for slot in slots.reversed() {
            if let call = slot.calls?.toolCalls.first(where: { $0.id == callID }) { return call }
        }
        return nil
    }

    /// Gives a function call item its arguments, once the model has written them all.
    package mutating func setArguments(_ arguments: String, of id: String) {
        guard let index = index(of: id), let calls = slots[index].calls, !calls.toolCalls.isEmpty else { return }
        count(slots[index], -1)
        var toolCalls = calls.toolCalls
        toolCalls[0].arguments = arguments
        slots[index].calls = Calls(toolCalls, calls.toolCallID)
        count(slots[index], +1)
        trim()
    }

    /// A spoken turn's words arrived: it is a plain user message from now on.
    package mutating func setTranscript(_ text: String, of id: String) {
        guard let index = index(of: id) else { return }
        slots[index].spokenMs = -1
        setText(text, of: id)
    }

    /// Gives message `id` its final text: a reply joins the history, empty, when it opens (so
    /// that items added while it streams come after it, as their `previous_item_id` says) and is
    /// filled in when it ends. Nothing happens if it was trimmed meanwhile.
    package mutating func setText(_ text: String, of id: String) {
        guard let index = index(of: id) else { return }
        let text = text.utf8.count > budget.maxBytes ? Self.prefix(of: text, bytes: budget.maxBytes) : text
        count(slots[index], -1)
        // Written at the end (the slot's id stays where it is), the old text left dead.
        deadBytes += Int(slots[index].textCount)
        slots[index].textCount = 0
        slots[index].textStart = store(text.utf8)
        slots[index].textCount = UInt32(text.utf8.count)
        count(slots[index], +1)
        trim()
    }

    // MARK: Budget

    /// Over `fraction` of the budget (or its message count).
    private func over(_ fraction: Double) -> Bool {
        slots.count > budget.maxMessages || Double(textBytes) > fraction * Double(budget.maxBytes)
            || budget.maxTokens.map { Double(tokens) > fraction * Double($0) } ?? false
    }

    private mutating func trim() {
        var dropped = 0
        switch budget.truncation {
        case .auto:
            while !slots.isEmpty && over(1) { dropOldest(); dropped += 1 }
        case .retentionRatio(let ratio, _):
            guard over(1) else { return }
            while !slots.isEmpty && over(ratio) { dropOldest(); dropped += 1 }
        case .disabled:
            // The memory bound, which no setting lifts.
            while !slots.isEmpty && (slots.count > 2 * budget.maxMessages || textBytes > 2 * budget.maxBytes) { dropOldest(); dropped += 1 }
        }
        guard dropped > 0 else { return }
        while let first = slots.firstIndex(where: { $0.role != .system }),
              slots[first].role == .assistant || slots[first].role == .tool, first < slots.count - 1 {
            remove(at: first)
            dropped += 1
        }
        truncated += dropped
    }

    private mutating func dropOldest() {
        remove(at: slots.firstIndex { $0.role != .system } ?? 0)
    }

    private mutating func count(_ slot: Slot, _ sign: Int) {
        textBytes += sign * slot.budgetBytes
        tokens += sign * slot.tokens
        callBoxBytes += sign * (slot.calls.map { 64 + $0.bytes } ?? 0)
    }

    private mutating func remove(at index: Int) {
        let slot = slots.remove(at: index)
        count(slot, -1)
        deadBytes += Int(slot.idCount) + Int(slot.textCount)
        // Freed once an eighth of the buffer is dead, so that what it holds stays close to its text.
        if deadBytes > max(256, (bytes.count - deadBytes) / 8) { compact(reserving: 0) }
    }

    // MARK: The buffer

    /// Appends `first` and `second` to the buffer; where `first` starts.
    private mutating func store(_ first: String.UTF8View, then second: String.UTF8View? = nil) -> UInt32 {
        let needed = first.count + (second?.count ?? 0)
        if bytes.count + needed > bytes.capacity { compact(reserving: needed) }
        let start = bytes.count
        bytes.append(contentsOf: first)
        if let second { bytes.append(contentsOf: second) }
        return UInt32(start)
    }

    /// Copies the live ids and texts into a new buffer with room for `needed` more and an eighth
    /// to grow: a doubling array would hold up to twice the text. (Copying 32 KiB at most, every
    /// eighth of the buffer written, costs a few microseconds a turn.)
    private mutating func compact(reserving needed: Int) {
        let live = bytes.count - deadBytes + needed
        var fresh: [UInt8] = []
        fresh.reserveCapacity(live + max(64, live / 8))
        for index in slots.indices {
            let slot = slots[index]
            slots[index].idStart = UInt32(fresh.count)
            fresh.append(contentsOf: bytes[slot.idRange])
            slots[index].textStart = UInt32(fresh.count)
            fresh.append(contentsOf: bytes[slot.textRange])
        }
        bytes = fresh
        deadBytes = 0
    }

    // MARK: Reading

    private func index(of id: String) -> Int? {
        let utf8 = id.utf8
        return slots.lastIndex { $0.idCount == utf8.count && bytes[$0.idRange].elementsEqual(utf8) }
    }

    private func id(of slot: Slot) -> String {
        String(decoding: bytes[slot.idRange], as: UTF8.self)
    }

    private func message(_ slot: Slot) -> ChatMessage {
        ChatMessage(role: slot.role, text: String(decoding: bytes[slot.textRange], as: UTF8.self),
                    spokenMilliseconds: slot.spokenMs < 0 ? nil : Int(slot.spokenMs),
                    toolCalls: slot.calls?.toolCalls ?? [], toolCallID: slot.calls?.toolCallID)
    }

    private func entry(_ slot: Slot) -> Entry { Entry(id: id(of: slot), message: message(slot), audio: slot.audio) }

    /// The longest prefix of `text` of at most `bytes` UTF-8 bytes that ends on a character.
    package static func prefix(of text: String, bytes: Int) -> String {
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

/// An empty conversation is at rest: a session holds none until its first item
/// (`SessionEngine.conversation`), and gives it back when the last is deleted.
extension ConversationHistory: RestingState {
    static package let resting = ConversationHistory()
    package var isResting: Bool { slots.isEmpty && lastItemID == nil && truncated == 0 }
}
