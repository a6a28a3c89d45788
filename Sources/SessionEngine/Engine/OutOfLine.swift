/// State a session holds only while something is happening (a turn, a reply, a call), kept
/// behind one pointer and given back when it is at rest again.
///
/// Why: an idle session is most of what a server holds (issue 26 wants one in 1 KiB), and the
/// state of turns and replies is most of a session's size: inline, `SessionEngine` was 1,448 bytes
/// and `SessionDriver` 2,400, whether a session had ever spoken or not. Behind `OutOfLine`, an idle
/// session pays 8 bytes for it.
///
/// A value type, copy-on-write like the standard library's collections: a copy shares the box
/// until one side changes it, so `SessionEngine` stays a value machine. Its fields are reached by
/// their own names (`turns.response`), so the state's owner writes no forwarder per field.
@dynamicMemberLookup
package struct OutOfLine<Value: RestingState & Sendable>: @unchecked Sendable {
    // @unchecked: the box is only written when uniquely referenced (copy-on-write), as Array's is.
    private final class Box {
        package var value: Value
        package init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    package init() {}

    /// The state: read in place (nothing copied, nothing allocated while at rest); written in
    /// place, the box made on the first write.
    package var value: Value {
        _read {
            if let box { yield box.value } else { yield Value.resting }
        }
        _modify {
            if box == nil {
                box = Box(.resting)
            } else if !isKnownUniquelyReferenced(&box!) {
                box = Box(box!.value)
            }
            yield &box!.value
        }
    }

    /// A field of the state, read and written in place as `value`'s are.
    package subscript<Field>(dynamicMember field: WritableKeyPath<Value, Field>) -> Field {
        _read { yield value[keyPath: field] }
        _modify { yield &value[keyPath: field] }
    }

    /// Gives the box back if the state is at rest again. Called once an input has been handled,
    /// not on every write: a turn's fields go to rest one by one.
    package mutating func settle() {
        if let box, box.value.isResting { self.box = nil }
    }

    /// Whether the box is there (for tests and the memory account).
    package var isHeld: Bool { box != nil }
}

/// A state with a resting value, the one `OutOfLine` holds no box for.
package protocol RestingState {
    /// The state of a session with nothing happening; a `static let`, so reading it copies nothing.
    static var resting: Self { get }
    /// Whether this is that state (nothing in flight that would be lost if the box went).
    var isResting: Bool { get }
}

/// An optional's resting value is nil: `OutOfLine<T?>` is a box made only while there is a `T`.
extension Optional: RestingState {
    static package var resting: Self { nil }
    package var isResting: Bool { self == nil }
}

/// A table's resting value is empty.
extension Dictionary: RestingState {
    static package var resting: Self { [:] }
    package var isResting: Bool { isEmpty }
}
