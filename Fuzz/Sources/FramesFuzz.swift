@testable import Server

/// Client frames after the upgrade, read as a connection reads them (`FrameStream`), and the same
/// bytes through `UTF8Validator` alone in the same reads, which must agree with the standard
/// library's validator in both directions. The input is a `Reads` byte and then the stream.
enum FramesFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let reads = Reads(input)
        var frames = FrameStream()
        var validator = UTF8Validator()
        var valid = true
        for read in reads.reads {
            frames.receive(read)
            valid = valid && validator.validate(read)
        }
        let reference = String(validating: reads.stream, as: UTF8.self) != nil
        precondition((valid && validator.isComplete) == reference, "UTF8Validator says \(valid && validator.isComplete), the standard library \(reference)")
    }
}
