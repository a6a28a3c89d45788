import Glibc
import Loop
import Store

// The child of StoreTests' kill -9 test: writes items through SQLiteConversationStore, one after
// another, and prints each item's seq once its write has returned, until it is killed. Whatever it
// printed must be in the file afterwards.
//
// store-writer PATH TOKEN_HASH
/// To standard error with write(2): the C `stderr` is a global Swift 6 will not touch.
func fail(_ message: String) -> Never {
    _ = "store-writer: \(message)\n".withCString { write(2, $0, strlen($0)) }
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    fail("usage: store-writer PATH TOKEN_HASH")
}
do {
    let store = try SQLiteConversationStore.open(path: arguments[1])
    let loop = try EventLoop(handle: LoopHandle(index: 0))
    store.sessionStarted(StoredSession(sessionID: "sess_crash", tenant: "", tokenHash: arguments[2], settings: "{}", lastSeq: 0), on: loop)
    var seq = 0
    while true {
        seq += 1
        let item = "{\"id\":\"item_\(seq)\",\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"\(String(repeating: "x", count: seq % 500))\"}]}"
        store.itemCompleted(sessionID: "sess_crash", seq: seq, itemID: "item_\(seq)", item: item,
                            event: "{\"type\":\"conversation.item.done\",\"item\":\(item)}", on: loop)
        // Unbuffered: the parent must see the seq the moment the write returned, not when a
        // buffer fills.
        let line = "\(seq)\n"
        _ = line.withCString { write(1, $0, strlen($0)) }
    }
} catch {
    fail("\(error)")
}
