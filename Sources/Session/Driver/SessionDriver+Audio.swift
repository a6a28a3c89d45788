import Access
import Codec
import Models
import Server
import Loop
import SessionEngine

/// The client's audio on its way to the engine: decoded, guarded against the reply's echo,
/// denoised, recorded; and what exists only while it flows.
extension SessionDriver {
    // MARK: Audio

    /// Why audio arriving this way does not fit the session's input format, if it does not.
    package func refusal(of arrival: SessionConfiguration.AudioArrival) -> ProtocolError? {
        configuration.refusal(of: arrival, allowsOpus: engine.allowsOpus)
    }

    package var inputAudioFormat: RealtimeAudioFormat { configuration.inputAudioFormat }

    package func feedAudio(_ convert: (AudioInput) throws -> [Int16]) {
        let listening: Listening
        if let current = self.listening {
            listening = current
        } else {
            listening = Listening(sampleRate: inputRate)
            self.listening = listening
            scheduleCodecCheck()
        }
        let arrived = loopTime
        listening.lastArrival = arrived
        let audio = listening.input
        do {
            let samples = try convert(audio)
            guard budget.audio(audio.lastInputNanoseconds, at: arrived, limits: endpoint.limits) else {
                return closeForLimit(.audio, "audio arrives faster than \(endpoint.limits.audioRealTimeFactor)× real time")
            }
            let due = listening.clock.frameArrived(duration: audio.lastInputNanoseconds, at: arrived)
            // Recorded where the stream's clock puts it: a burst sent at once starts when it came.
            if let recorder, recorder.rate == inputRate { recorder.caller(samples, startsAt: due) }
            // The echo guard first (its reference is the reply as played, before any denoising),
            // then the line's noise is weighed, then the denoiser, then the engine's VAD and recogniser.
            let heard = guarded(samples, arrived: arrived)
            if listening.lineNoise.heard(heard) { lineFoundNoisy() }
            perform(engine.handle(.audio(denoised(heard))))
            if engine.awaitsVoiceActivity { scoreVoiceActivity() }
            let done = loopTime
            metrics.audioFrames.add(1, .processed)
            metrics.audioLag.observe(nanoseconds: done > due ? done - due : 0)
        } catch let error as OpusError {
            metrics.audioFrames.add(1, .rejected)
            perform(engine.handle(.invalidClientEvent(ProtocolError(.invalidValue, "an Opus packet could not be decoded: \(error)"))))
        } catch {
            metrics.audioFrames.add(1, .rejected)
            perform(engine.handle(.invalidClientEvent(ProtocolError(.invalidValue, "audio could not be processed: \(error)"))))
        }
    }

    /// The windows this audio completed wait in the loop's batch (`VoiceActivityPass`); with no
    /// loop (a session not yet attached) they are scored now.
    private func scoreVoiceActivity() {
        guard let model = endpoint.speech.voiceActivity else { return }
        if let loop {
            VoiceActivityPass.on(loop).join(self, model: model, on: loop)
        } else {
            model.scoreStaged()
            voiceActivityScored()
        }
    }

    /// The loop's batch has scored this session's windows.
    func voiceActivityScored() {
        perform(engine.handle(.voiceActivityScored))
    }

    // MARK: Echo guard

    var echoGuardOn: Bool { echoGuardAlways || (configuration.echoGuard ?? echoGuardByDefault) }

    /// The rate the engine hears this session's input at: G.711's 8 kHz, or 16 kHz.
    var inputRate: Int { configuration.inputAudioFormat.g711Law == nil ? 16_000 : G711.sampleRate }

    func guarded(_ samples: [Int16], arrived: UInt64) -> [Int16] {
        guard let echo, let audio = listening?.input else { return samples }
        guard echoGuardOn, echo.sampleRate == inputRate else {
            // Turned off (or the input's rate changed): what it held goes on, and its memory goes.
            self.echo = nil
            return echo.sampleRate == inputRate ? echo.flush() + samples : samples
        }
        let out = echo.process(samples, arrived: arrived, duration: audio.lastInputNanoseconds)
        let (cancelled, held) = echo.takeCounts()
        if cancelled > 0 { metrics.echoFrames.add(cancelled, .cancelled) }
        if held > 0 { metrics.echoFrames.add(held, .held) }
        return out
    }

    // MARK: Recording

    /// Starts or ends the recording as the session's `recording` setting now says (the engine
    /// refused it already where the server does not record). It begins now: nothing the caller
    /// said before is in it.
    /// Whether the session is being recorded now.
    var isRecording: Bool { recorder != nil }

    func recordingAsked() {
        let asked = configuration.recording == true
        guard asked != (recorder != nil) else { return }
        if asked, let recordings = endpoint.recordings, let loop = socket?.loop {
            recorder = SessionRecorder(recordings: recordings, sessionID: engine.sessionID, rate: inputRate, now: loopTime, loop: loop)
        } else {
            recorder?.finish(at: loopTime)
            recorder = nil
        }
    }

    // MARK: Noise reduction

    /// Whether a line found noisy is denoised: a phone call's (SIP, /twilio), on a server that
    /// does so (`--phone-line-denoise auto`).
    var denoisesLine: Bool { echoGuardAlways && endpoint.denoisesNoisyPhoneLines }

    /// The input's floor stayed loud for seconds: the engine weighs its turns' ends for it, and a
    /// phone call's input is denoised from here on (unless its session chose its own).
    private func lineFoundNoisy() {
        perform(engine.handle(.lineNoisy))
        guard denoisesLine, configuration.noiseReduction == nil else {
            return sessionLog.debug("input noisy", metadata: ["session": "\(engine.sessionID)"])
        }
        metrics.noisyPhoneLines.add(1)
        sessionLog.info("phone line noisy: denoising it", metadata: ["session": "\(engine.sessionID)"])
    }

    /// The input denoised as the session's `noise_reduction` asks (the kind and the engine's rate
    /// it was made for), or, on a phone line the session left without one, once the line is found
    /// noisy (`LineNoiseFloor`: a handset's, near field); what a denoiser let go still held goes on
    /// undenoised, so that the engine's audio clock loses no samples.
    func denoised(_ samples: [Int16]) -> [Int16] {
        let kind: Denoiser.Kind? = switch configuration.noiseReduction {
        case nil: denoisesLine && listening?.lineNoise.isNoisy == true ? .nearField : nil
        case .nearField?: .nearField
        case .farField?: .farField
        }
        var held: [Int16] = []
        if let current = denoiser, current.kind != kind || current.sampleRate != inputRate {
            if current.sampleRate == inputRate { held = current.flush() }
            denoiser = nil
        }
        guard let kind else { return held.isEmpty ? samples : held + samples }
        if denoiser == nil {
            // A rate it cannot take (none the engine hears at) leaves the input as it is.
            denoiser = try? Denoiser(kind: kind, sampleRate: inputRate)
            updateAccount()
        }
        guard let denoiser else { return held + samples }
        return held + denoiser.process(samples)
    }

    /// A piece of the reply goes out: the guard's reference and the recording's right channel,
    /// from when the client plays it.
    func replyPlayed(_ samples: [Int16], at playsAt: UInt64) {
        if let recorder, recorder.rate == inputRate { recorder.agent(samples, playsAt: playsAt) }
        guard echoGuardOn else { return }
        if echo == nil || echo?.sampleRate != inputRate {
            // G.711 at 8 kHz is a phone line's audio: its echo comes back after the line's round trip.
            echo = EchoGuard(sampleRate: inputRate, now: loopTime, cancels: endpoint.echoCanceller,
                             gate: inputRate == 8_000 ? .phoneLine : .init())
            updateAccount()
        }
        echo?.reply(samples, playsAt: playsAt)
    }

    /// Lets the codec go once audio has stopped for a while; a later packet makes a new one.
    func scheduleCodecCheck() {
        listening?.idleCheck = socket?.loop.schedule(after: Self.codecIdleSeconds) { [weak self] in
            guard let self, let listening else { return }
            if Double(loopTime &- listening.lastArrival) / 1e9 >= Self.codecIdleSeconds {
                self.listening = nil
                echo = nil
                denoiser = nil
                perform(engine.handle(.audioStopped))
            } else {
                scheduleCodecCheck()
            }
        }
    }
}
