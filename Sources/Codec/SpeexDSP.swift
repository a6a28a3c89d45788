import CSpeexDSP

/// libspeexdsp, wrapped once: the only file that calls `speex_*`. Each state is a class that owns
/// its C state and frees it in `deinit`; a state that cannot be made throws `SpeexDSPError`. The
/// types built on it (`EchoCanceller`, `Denoiser`, `Resampler`) check their frame lengths first,
/// so nothing here is handed a buffer of the wrong size.
///
/// Not thread-safe; one state per stream, as speexdsp's own are.
public enum SpeexDSPError: Error, Equatable, Sendable {
    /// `speex_echo_state_init` returned NULL.
    case echoState
    /// `speex_preprocess_state_init` returned NULL.
    case preprocessState
    /// `speex_resampler_init` failed with this error code.
    case resampler(code: Int32)
}

/// The acoustic echo canceller's state (speex_echo.h, MDF): frames of `frameSamples`, a filter
/// `tailSamples` long.
final class SpeexEchoState {
    fileprivate let state: OpaquePointer

    /// `speex_echo_state_init`, then `SPEEX_ECHO_SET_SAMPLING_RATE`.
    init(frameSamples: Int, tailSamples: Int, sampleRate: Int) throws(SpeexDSPError) {
        guard let state = speex_echo_state_init(Int32(frameSamples), Int32(tailSamples)) else { throw .echoState }
        var rate = Int32(sampleRate)
        speex_echo_ctl(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
        self.state = state
    }

    deinit { speex_echo_state_destroy(state) }

    /// `speex_echo_cancellation`: one frame of `microphone` less the echo of `reference`, into `output`.
    func cancel(_ microphone: UnsafePointer<Int16>, _ reference: UnsafePointer<Int16>, into output: UnsafeMutablePointer<Int16>) {
        speex_echo_cancellation(state, microphone, reference, output)
    }

    /// `speex_echo_state_reset`
    func reset() { speex_echo_state_reset(state) }
}

/// The preprocessor's state (speex_preprocess.h): denoising, residual echo suppression, AGC and
/// VAD over frames of `frameSamples`. Parley never turns its AGC or VAD on (setting the VAD at all
/// makes speexdsp print a warning on stderr; the server's VAD is its own).
final class SpeexPreprocessState {
    private let state: OpaquePointer
    /// Kept alive while the preprocessor points at it (`SPEEX_PREPROCESS_SET_ECHO_STATE`).
    private var echo: SpeexEchoState?

    /// `speex_preprocess_state_init`. Denoising starts on, as speexdsp makes it.
    init(frameSamples: Int, sampleRate: Int) throws(SpeexDSPError) {
        guard let state = speex_preprocess_state_init(Int32(frameSamples), Int32(sampleRate)) else { throw .preprocessState }
        self.state = state
    }

    deinit { speex_preprocess_state_destroy(state) }

    /// `SPEEX_PREPROCESS_SET_DENOISE`
    func setDenoise(_ on: Bool) {
        var value: Int32 = on ? 1 : 0
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &value)
    }

    /// `SPEEX_PREPROCESS_SET_NOISE_SUPPRESS`: the most the denoiser attenuates noise, in dB (negative).
    func setNoiseSuppress(dB: Int) {
        var value = Int32(dB)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &value)
    }

    /// `SPEEX_PREPROCESS_SET_ECHO_STATE`: suppress what `echo` left of the echo too.
    func setEchoState(_ echo: SpeexEchoState) {
        self.echo = echo
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo.state))
    }

    /// `speex_preprocess_run`: one frame, in place.
    func run(_ frame: UnsafeMutablePointer<Int16>) {
        speex_preprocess_run(state, frame)
    }
}

/// The resampler's state (speex_resampler.h).
final class SpeexResamplerState {
    private let state: OpaquePointer

    /// `speex_resampler_init`, then `speex_resampler_skip_zeros` (without it the output starts
    /// with the filter's delay in zeros).
    init(channels: Int, inputRate: Int, outputRate: Int, quality: Int32) throws(SpeexDSPError) {
        var error: Int32 = 0
        guard let state = speex_resampler_init(UInt32(channels), UInt32(inputRate), UInt32(outputRate), quality, &error) else {
            throw .resampler(code: error)
        }
        self.state = state
        speex_resampler_skip_zeros(state)
    }

    deinit { speex_resampler_destroy(state) }

    /// `speex_resampler_process_interleaved_int`; the lengths are frames (samples per channel),
    /// updated to what was consumed and produced.
    func process(_ input: UnsafePointer<Int16>, _ inputFrames: inout UInt32, _ output: UnsafeMutablePointer<Int16>, _ outputFrames: inout UInt32) {
        speex_resampler_process_interleaved_int(state, input, &inputFrames, output, &outputFrames)
    }

    /// `speex_resampler_process_interleaved_float`
    func process(_ input: UnsafePointer<Float>, _ inputFrames: inout UInt32, _ output: UnsafeMutablePointer<Float>, _ outputFrames: inout UInt32) {
        speex_resampler_process_interleaved_float(state, input, &inputFrames, output, &outputFrames)
    }

    /// `speex_resampler_get_input_latency`
    var inputLatency: Int { Int(speex_resampler_get_input_latency(state)) }

    /// `speex_resampler_reset_mem`, then `speex_resampler_skip_zeros`.
    func reset() {
        speex_resampler_reset_mem(state)
        speex_resampler_skip_zeros(state)
    }
}
