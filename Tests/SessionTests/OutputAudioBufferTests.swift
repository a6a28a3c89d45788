import Testing
import Session
import SessionEngine

struct OutputAudioBufferTests {
    @Test func aReplyStartsOnceAndStopsAfterItsDone() {
        var buffer = OutputAudioBuffer()
        let started = buffer.audio(of: "resp_1")
        let again = buffer.audio(of: "resp_1")
        let stopped = buffer.done("resp_1")
        let twice = buffer.done("resp_1")
        #expect(started == .outputAudioBufferStarted(responseID: "resp_1"))
        #expect(again == nil)
        #expect(stopped == .outputAudioBufferStopped(responseID: "resp_1"))
        #expect(twice == nil)
    }

    @Test func aCutReplyIsClearedAndNeverStopped() {
        var buffer = OutputAudioBuffer()
        _ = buffer.audio(of: "resp_1")
        let cleared = buffer.stopped("resp_1")
        let done = buffer.done("resp_1")
        #expect(cleared == .outputAudioBufferCleared(responseID: "resp_1"))
        #expect(done == nil)
    }

    @Test func theClientsClearEndsTheReplyWithoutASecondEvent() {
        var buffer = OutputAudioBuffer()
        _ = buffer.audio(of: "resp_1")
        buffer.cleared("resp_1")
        let stopped = buffer.stopped("resp_1")
        let done = buffer.done("resp_1")
        #expect(stopped == nil && done == nil)
    }

    @Test func aReplyWithoutAudioHasNoBufferEvents() {
        var buffer = OutputAudioBuffer()
        let done = buffer.done("resp_1")
        let stopped = buffer.stopped("resp_1")
        #expect(done == nil && stopped == nil)
    }
}
