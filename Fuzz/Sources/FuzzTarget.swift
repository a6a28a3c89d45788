/// One libFuzzer target: a parser fed each input the way Parley feeds it, with the invariants the
/// server relies on checked by `precondition`, so that libFuzzer reports a broken one as a crash.
///
/// Adding a target (a `jwt` one, say) is a file with an enum whose `run` takes the input, one line
/// in `all` below, and a few small seed files in Fuzz/corpus/<name>/; scripts/tools/libfuzzer.sh finds
/// the targets by asking the binary (`parley-fuzz --list`), so it needs no change.
struct FuzzTarget: Sendable {
    /// What `--target=` selects, and the corpus directory's name.
    let name: String
    /// libFuzzer's -max_len: long enough to reach every bound the target checks, no longer, since
    /// longer inputs are slower to run and to mutate.
    let maxLength: Int
    let run: @Sendable (UnsafeRawBufferPointer) -> Void

    static let all: [FuzzTarget] = [
        FuzzTarget(name: "http", maxLength: 4096, run: HTTPFuzz.run),
        FuzzTarget(name: "frames", maxLength: 4096, run: FramesFuzz.run),
        FuzzTarget(name: "json-events", maxLength: 4096, run: JSONEventsFuzz.run),
        FuzzTarget(name: "client-secret", maxLength: 9000, run: ClientSecretFuzz.run),
        FuzzTarget(name: "jwt", maxLength: 9000, run: JWTFuzz.run),
        FuzzTarget(name: "twilio", maxLength: 12000, run: TwilioFuzz.run),
        FuzzTarget(name: "wav", maxLength: 4096, run: WAVFuzz.run),
        FuzzTarget(name: "ogg", maxLength: 8192, run: OggFuzz.run),
        FuzzTarget(name: "stun", maxLength: 1600, run: STUNFuzz.run),
        FuzzTarget(name: "sdp", maxLength: 8192, run: SDPFuzz.run),
        FuzzTarget(name: "multipart", maxLength: 9000, run: MultipartFuzz.run),
        FuzzTarget(name: "rtp", maxLength: 1500, run: RTPFuzz.run),
        FuzzTarget(name: "jitter", maxLength: 4096, run: JitterFuzz.run),
        FuzzTarget(name: "sctp", maxLength: 4096, run: SCTPFuzz.run),
        FuzzTarget(name: "dtls-fingerprint", maxLength: 256, run: DTLSFingerprintFuzz.run),
        FuzzTarget(name: "mcp-answer", maxLength: 4096, run: MCPAnswerFuzz.run),
        FuzzTarget(name: "sip", maxLength: 8192, run: SIPFuzz.run),
        FuzzTarget(name: "dial-out", maxLength: 8192, run: DialOutFuzz.run),
    ]
}
