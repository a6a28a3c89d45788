@testable import Codec

/// An Ogg Opus file, as `parley talk --audio` reads one. Each input is read as it is, and then, if
/// any of its pages' CRCs were wrong, with them made right (`OggPage.repairingCRCs`): otherwise
/// almost every mutation would stop at the page checksum and never reach the stream, packet and
/// OpusHead checks behind it.
///
/// Checks that a file that reads has one or two channels and packets within their bound and the
/// file's size, and that a refusal can be described.
enum OggFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        read(bytes)
        let repaired = OggPage.repairingCRCs(bytes)
        if repaired != bytes { read(repaired) }
    }

    private static func read(_ bytes: [UInt8]) {
        do {
            let file = try OggOpusFile(bytes: bytes)
            precondition(file.channels == 1 || file.channels == 2, "\(file.channels) channels")
            precondition(file.packets.allSatisfy { $0.count <= OggOpusFile.maxAudioPacketBytes }, "a packet over the bound")
            precondition(file.packets.reduce(0) { $0 + $1.count } <= bytes.count, "more packet bytes than the file has")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }
}
