import Loop
import Testing

/// Secrets are scrubbed by value whatever their shape once registered, and the minted and
/// client-held ones by shape (issue 41: a `vllm-token-…` key quoted back in a 401 reached the log
/// and the client's `error` event).
@Suite struct SecretsTests {
    @Test func aRegisteredKeyOfAnyShapeIsScrubbedAndSoIsItsRandomPart() {
        let key = "vllm-token-3f9a0c1d2e4b5a6978812233"
        Secrets.register(key)
        #expect(Secrets.scrub("Incorrect API key provided: \(key). Find your key") == "Incorrect API key provided: [redacted]. Find your key")
        // Quoted without its prefix, as some servers do.
        #expect(Secrets.scrub("key 3f9a0c1d2e4b5a6978812233 is not valid") == "key [redacted] is not valid")
        #expect(Secrets.isRegistered(key) && Secrets.isRegistered("3f9a0c1d2e4b5a6978812233"))
    }

    @Test func whitespaceAroundAKeyIsNotPartOfIt() {
        Secrets.register("  a-key-read-from-a-file-with-a-newline\n")
        #expect(Secrets.scrub("got a-key-read-from-a-file-with-a-newline") == "got [redacted]")
    }

    @Test func aValueTooShortToBeASecretIsNotRegistered() {
        Secrets.register("short")
        #expect(!Secrets.isRegistered("short"))
        #expect(Secrets.scrub("a short line") == "a short line")
    }

    @Test func mintedAndBearerSecretsAreScrubbedByShape() {
        #expect(Secrets.scrub("token rt_AbCdEfGhIjKlMnOpQrStUvWx refused") == "token rt_[redacted] refused")
        #expect(Secrets.scrub("secret ek_eyJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJl expired") == "secret ek_[redacted] expired")
        #expect(Secrets.scrub("Authorization: Bearer eyJhbGciOi.x.y, next") == "Authorization: Bearer [redacted], next")
        #expect(Secrets.scrub("GET /v1/realtime?resume_token=rt_abc123abc123abc123abc123&last_seq=4") == "GET /v1/realtime?resume_token=[redacted]&last_seq=4")
        #expect(Secrets.scrub("openai-insecure-api-key.sk-abcdef123456, realtime") == "openai-insecure-api-key.[redacted], realtime")
        #expect(Secrets.scrub("Incorrect API key provided: sk-proj-abcdef123456. See docs") == "Incorrect API key provided: sk-[redacted]. See docs")
    }

    @Test func wordsThatOnlyLookLikeAPrefixAreLeftAlone() {
        #expect(Secrets.scrub("the task-queue and disk-usage") == "the task-queue and disk-usage")
        #expect(Secrets.scrub("audio_start_time_ms was 40") == "audio_start_time_ms was 40")
        #expect(Secrets.scrub("no secret here") == "no secret here")
    }
}
