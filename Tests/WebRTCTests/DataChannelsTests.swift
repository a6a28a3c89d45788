import Testing
@testable import WebRTC

/// A browser (DTLS client) and Parley (DTLS server) joined directly, on a virtual clock.
private struct ChannelPair {
    var browser: DataChannels
    var parley: DataChannels
    var now: UInt64 = 0
    var toParley: [[UInt8]] = []
    var toBrowser: [[UInt8]] = []
    var browserEvents: [DataChannels.Action] = []
    var parleyEvents: [DataChannels.Action] = []

    init() {
        var configuration = SCTPAssociation.Configuration()
        configuration.heartbeatInterval = nil
        browser = DataChannels(association: SCTPAssociation(configuration: configuration), role: .client)
        parley = DataChannels(association: SCTPAssociation(configuration: configuration), role: .server)
    }

    mutating func take(_ actions: [DataChannels.Action], fromBrowser: Bool) {
        for action in actions {
            if case .send(let bytes) = action {
                if fromBrowser { toParley.append(bytes) } else { toBrowser.append(bytes) }
            } else if fromBrowser {
                browserEvents.append(action)
            } else {
                parleyEvents.append(action)
            }
        }
    }

    /// Delivers packets both ways and runs timers until nothing moves for a while.
    mutating func settle() {
        for _ in 0..<2000 {
            now += 1_000_000
            let forParley = toParley, forBrowser = toBrowser
            toParley = []
            toBrowser = []
            for bytes in forParley { take(parley.receive(bytes, now: now), fromBrowser: false) }
            for bytes in forBrowser { take(browser.receive(bytes, now: now), fromBrowser: true) }
            if let deadline = browser.nextDeadline, deadline <= now { take(browser.tick(now: now), fromBrowser: true) }
            if let deadline = parley.nextDeadline, deadline <= now { take(parley.tick(now: now), fromBrowser: false) }
        }
    }

    mutating func connect() {
        take(browser.connect(now: now), fromBrowser: true)
        settle()
    }

    mutating func open(_ label: String, protocol: String = "") throws -> UInt16 {
        let (stream, actions) = try browser.open(label: label, protocol: `protocol`, now: now)
        take(actions, fromBrowser: true)
        settle()
        return stream
    }
}

struct DataChannelsTests {
    @Test func theBrowsersOaiEventsChannelOpensAndCarriesJSONBothWays() throws {
        var pair = ChannelPair()
        pair.connect()
        #expect(pair.parleyEvents == [.connected])
        let stream = try pair.open("oai-events")
        #expect(stream == 0)
        #expect(pair.parleyEvents.last == .opened(stream: 0, label: "oai-events", protocol: ""))
        // The DATA_CHANNEL_ACK came back on the same stream.
        #expect(pair.browserEvents.last == .opened(stream: 0, label: "oai-events", protocol: ""))

        let update = #"{"type":"session.update","session":{"instructions":"Be brief."}}"#
        pair.take(try pair.browser.send(text: update, on: 0, now: pair.now), fromBrowser: true)
        let created = #"{"type":"session.created","event_id":"event_1"}"#
        pair.take(try pair.parley.send(text: created, on: 0, now: pair.now), fromBrowser: false)
        pair.settle()
        #expect(pair.parleyEvents.last == .message(stream: 0, .text(update)))
        #expect(pair.browserEvents.last == .message(stream: 0, .text(created)))
    }

    @Test func emptyAndBinaryMessagesKeepTheirKind() throws {
        var pair = ChannelPair()
        pair.connect()
        _ = try pair.open("oai-events")
        pair.take(try pair.browser.send(text: "", on: 0, now: pair.now), fromBrowser: true)
        pair.take(try pair.browser.send(binary: [], on: 0, now: pair.now), fromBrowser: true)
        pair.take(try pair.browser.send(binary: [0, 255, 7], on: 0, now: pair.now), fromBrowser: true)
        let large = String(repeating: "é", count: 40_000)
        pair.take(try pair.browser.send(text: large, on: 0, now: pair.now), fromBrowser: true)
        pair.settle()
        #expect(Array(pair.parleyEvents.suffix(4)) == [
            .message(stream: 0, .text("")), .message(stream: 0, .binary([])),
            .message(stream: 0, .binary([0, 255, 7])), .message(stream: 0, .text(large)),
        ])
    }

    @Test func severalChannelsKeepTheirMessagesApart() throws {
        var pair = ChannelPair()
        pair.connect()
        let events = try pair.open("oai-events")
        let other = try pair.open("chat", protocol: "x-chat")
        #expect(events == 0 && other == 2)
        #expect(pair.parleyEvents.contains(.opened(stream: 2, label: "chat", protocol: "x-chat")))
        pair.take(try pair.browser.send(text: "a", on: 2, now: pair.now), fromBrowser: true)
        pair.take(try pair.browser.send(text: "b", on: 0, now: pair.now), fromBrowser: true)
        pair.settle()
        #expect(Array(pair.parleyEvents.suffix(2)) == [.message(stream: 2, .text("a")), .message(stream: 0, .text("b"))])
    }

    /// RFC 8831 section 6.7: the browser resets its stream; Parley resets its own in answer, and
    /// both report the channel closed.
    @Test func closingAChannelResetsBothDirections() throws {
        var pair = ChannelPair()
        pair.connect()
        _ = try pair.open("oai-events")
        pair.take(pair.browser.close(stream: 0, now: pair.now), fromBrowser: true)
        pair.settle()
        #expect(pair.parleyEvents.last == .closed(stream: 0))
        #expect(pair.browserEvents.last == .closed(stream: 0))
        #expect(pair.parley.channels.isEmpty && pair.browser.channels.isEmpty)
        #expect(throws: SCTPSendError.noSuchChannel(0)) { try pair.parley.send(text: "late", on: 0, now: pair.now) }
        // The stream can be opened again, numbered from 0.
        #expect(try pair.open("oai-events") == 0)
        pair.take(try pair.browser.send(text: "again", on: 0, now: pair.now), fromBrowser: true)
        pair.settle()
        #expect(pair.parleyEvents.last == .message(stream: 0, .text("again")))
    }

    @Test func anOpenOnParleysOwnParityIsIgnored() throws {
        var pair = ChannelPair()
        pair.connect()
        let open = DataChannelControlMessage.open(DataChannelOpen(label: "odd")).encoded()
        var browserAssociation = pair.browser.association
        let actions = try browserAssociation.send(open, stream: 1, ppid: DataChannels.PPID.control, now: pair.now)
        for case .send(let bytes) in actions { pair.toParley.append(bytes) }
        pair.settle()
        #expect(pair.parleyEvents == [.connected])
        #expect(pair.parley.channels.isEmpty)
    }

    @Test func theAssociationsEndClosesEveryChannel() throws {
        var pair = ChannelPair()
        pair.connect()
        _ = try pair.open("oai-events")
        pair.take(pair.browser.shutdown(now: pair.now), fromBrowser: true)
        pair.settle()
        #expect(Array(pair.parleyEvents.suffix(2)) == [.closed(stream: 0), .ended(.closed(.shutdown))])
    }

    @Test func aDataChannelOpenRoundTrips() throws {
        let open = DataChannelOpen(channelType: 0x81, priority: 512, reliability: 3, label: "oai-events", protocol: "json")
        let bytes = DataChannelControlMessage.open(open).encoded()
        #expect(bytes.prefix(4) == [0x03, 0x81, 0x02, 0x00])
        #expect(try DataChannelControlMessage(parsing: bytes) == .open(open))
        #expect(try DataChannelControlMessage(parsing: [0x02]) == .ack)
        #expect(!open.ordered)
    }

    @Test func malformedDataChannelOpensAreRefused() {
        var tooLong = DataChannelControlMessage.open(DataChannelOpen(label: "x")).encoded()
        tooLong[8] = 0x10  // a 4,097-byte label
        #expect(throws: DataChannelError.fieldTooLong) { try DataChannelControlMessage(parsing: tooLong) }
        let truncated = Array(DataChannelControlMessage.open(DataChannelOpen(label: "oai-events")).encoded().dropLast())
        #expect(throws: DataChannelError.truncated) { try DataChannelControlMessage(parsing: truncated) }
        var badUTF8 = DataChannelControlMessage.open(DataChannelOpen(label: "ab")).encoded()
        badUTF8[12] = 0xFF
        #expect(throws: DataChannelError.invalidUTF8) { try DataChannelControlMessage(parsing: badUTF8) }
        var badType = DataChannelControlMessage.open(DataChannelOpen(label: "ab")).encoded()
        badType[1] = 0x07
        #expect(throws: DataChannelError.unknownChannelType(7)) { try DataChannelControlMessage(parsing: badType) }
        #expect(throws: DataChannelError.unknownMessageType(9)) { try DataChannelControlMessage(parsing: [9]) }
        #expect(throws: DataChannelError.truncated) { try DataChannelControlMessage(parsing: []) }
    }
}
