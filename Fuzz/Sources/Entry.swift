import Glibc

// libFuzzer's two entry points. One binary holds every target, so the fuzzers build with one link
// rather than one each; `--target=NAME` picks the target (libFuzzer ignores flags that start with
// `--`, and passes them on to the processes it starts for -merge and -minimize_crash).

/// Set once by `LLVMFuzzerInitialize`, before libFuzzer runs any input; libFuzzer runs inputs on
/// one thread.
nonisolated(unsafe) private var selected: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    let arguments = (0..<Int(argc.pointee)).compactMap { argv.pointee?[$0].map { String(cString: $0) } }
    if arguments.contains("--list") {
        // For scripts/tools/libfuzzer.sh: one target a line, with its -max_len.
        for target in FuzzTarget.all { print(target.name, target.maxLength) }
        exit(0)
    }
    let name = arguments.last { $0.hasPrefix("--target=") }.map { String($0.dropFirst("--target=".count)) }
    guard let target = FuzzTarget.all.first(where: { $0.name == name }) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        let usage = "parley-fuzz: give --target=NAME (\(names)) or --list, then libFuzzer's flags and corpus directories\n"
        _ = usage.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected!.run(UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size))
    return 0
}
