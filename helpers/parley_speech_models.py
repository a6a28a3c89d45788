"""The models of Parley's speech helper (helpers/parley_speech.py, which serves them): Smart Turn
v3.2 and the Whisper log-mel features it reads, the recogniser (Whisper tiny.en or base, by
faster-whisper) and the Piper voice. Each takes pcm16 at 16 or 8 kHz and raises
`Refusal` (a code of the helper's contract and a message) for what it cannot serve; the protocol,
the queues and the contract are the helper's.
"""

import os
import re
from typing import NamedTuple, Optional

import numpy as np

RATE = 16000


class Refusal(Exception):
    """A request the helper answers with an error CODE (one of ERRORS) instead of a result."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Confidence(NamedTuple):
    """How sure Whisper was of a decode, by its own measures (faster-whisper's): the average
    log-probability of its tokens, and the probability it gave the no-speech token at the start.
    A hum or a breath decoded as words ("And then them.", "No, no.") scores low on both, and the
    server's rule for a paused reply weighs them (ReplyInterruption, docs/benchmarks.md)."""

    logprob: float
    no_speech: float


class Decoded(NamedTuple):
    """A recogniser's answer: the words, its confidence in them (None where it gives none), and the
    language it heard them in with its probability (1 where the language was given; None from a
    window too short to decode)."""

    text: str
    confidence: Optional[Confidence]
    language: Optional[str] = None
    language_probability: Optional[float] = None


# MARK: Whisper log-mel features (Smart Turn's input)


class WhisperFeatures:
    """Whisper's log-mel spectrogram as its feature extractor computes it (80 Slaney mel bands,
    25 ms Hann windows every 10 ms, log10 clamped to 8 decades below the peak, scaled to about
    -1...1), for a fixed number of samples. The filter bank and window are made once."""

    N_FFT = 400
    HOP = 160
    MELS = 80

    def __init__(self, seconds):
        self.samples = seconds * RATE
        n = np.arange(self.N_FFT)
        # Periodic Hann (torch.hann_window's default): the DFT's window, not the symmetric one.
        self.window = (0.5 - 0.5 * np.cos(2 * np.pi * n / self.N_FFT)).astype(np.float32)
        self.filters = self._slaney_filters().astype(np.float32)

    @staticmethod
    def _hz_to_mel(hz):
        # Slaney's scale: linear below 1 kHz, logarithmic above.
        hz = np.asarray(hz, dtype=np.float64)
        mel = hz / (200.0 / 3)
        log_region = hz >= 1000.0
        return np.where(log_region, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mel)

    @staticmethod
    def _mel_to_hz(mel):
        mel = np.asarray(mel, dtype=np.float64)
        hz = mel * (200.0 / 3)
        return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), hz)

    def _slaney_filters(self):
        bins = self.N_FFT // 2 + 1
        fft_hz = np.linspace(0, RATE / 2, bins)
        edges = self._mel_to_hz(np.linspace(self._hz_to_mel(0.0), self._hz_to_mel(RATE / 2), self.MELS + 2))
        widths = np.diff(edges)
        offsets = edges[None, :] - fft_hz[:, None]
        rising = -offsets[:, :-2] / widths[:-1]
        falling = offsets[:, 2:] / widths[1:]
        filters = np.maximum(0.0, np.minimum(rising, falling))
        # Slaney normalisation: each band's area is the same.
        filters *= (2.0 / (edges[2:] - edges[:-2]))[None, :]
        return filters  # (bins, mels)

    def __call__(self, audio):
        """`audio`: float32 at 16 kHz, exactly `self.samples` long. Returns (80, frames)."""
        # Zero mean, unit variance over the whole window, as Smart Turn was trained (do_normalize).
        audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
        half = self.N_FFT // 2
        padded = np.pad(audio, (half, half), mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(padded, self.N_FFT)[:: self.HOP]
        spectrum = np.fft.rfft(frames * self.window, axis=-1)
        power = (spectrum.real ** 2 + spectrum.imag ** 2).astype(np.float32)
        mel = power @ self.filters  # (frames, mels)
        log_mel = np.log10(np.maximum(mel, 1e-10)).T[:, :-1]  # Whisper drops the last frame
        log_mel = np.maximum(log_mel, log_mel.max() - 8.0)
        return ((log_mel + 4.0) / 4.0).astype(np.float32)


# MARK: Models


def onnx_session(path, threads):
    """An ONNX Runtime session as the helper runs every model: `threads` for one run (requests run
    side by side on the helper's workers instead), no spinning between runs (an idle helper costs
    no CPU), all graph optimisations, and no CPU memory arena. The arena keeps the peak of every
    run's buffers for the life of the process: measured, Smart Turn and Piper loaded and run once
    held 154 MiB with it and 124 without, and a decision or a sentence cost the same CPU either way
    (45 to 52 ms a Smart Turn decision, 312 to 370 ms a sentence of Piper: the spread of runs of
    either). Piper's own loader would give its session a thread per core, spinning, and the arena."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_cpu_mem_arena = False
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


class SmartTurn:
    """Smart Turn v3.2: is the turn in this audio complete? Input the last 8 s (zeros before a
    shorter turn), output the probability that the speaker has finished."""

    NAME = "smart-turn-v3.2"

    def __init__(self, path, threads, seconds):
        self.SECONDS = seconds
        # One thread per decision: decisions run side by side on the pool instead, and a 2-core
        # server keeps a core for its loops (about 30 ms a decision on one thread).
        self.session = onnx_session(path, threads)
        self.features = WhisperFeatures(self.SECONDS)

    def probability(self, pcm, rate):
        audio = to_16k(pcm, rate)
        n = self.features.samples
        audio = audio[-n:] if len(audio) >= n else np.pad(audio, (n - len(audio), 0))
        if not audio.any():
            return 0.0
        features = self.features(audio)[None, :, :]
        output = self.session.run(None, {"input_features": features})[0]
        return float(np.asarray(output).reshape(-1)[0])


class Whisper:
    """Whisper (tiny.en, or base: `name`): the turn's audio in, its words out. A multilingual model
    (base) hears the language a request names (ISO-639-1, `languages`), or finds it itself from
    the window when none is named (Whisper's own language tokens, on the encoder's output the
    decode reads anyway); tiny.en hears English only."""

    NAME = "whisper-tiny.en"

    def __init__(self, directory, threads, replicas=1, name=NAME):
        self.NAME = name
        import sys
        import types

        import ctranslate2

        # faster-whisper imports PyAV, its audio file decoder, whatever it is given: 16 MiB of
        # FFmpeg's libraries resident (measured, 23.4 MiB its import with PyAV, 7.5 without). The
        # helper hands it samples, never a file, so a placeholder stands for PyAV; a call that
        # needed the real one (decode_audio) would fail on the placeholder, loudly.
        sys.modules.setdefault("av", types.ModuleType("av"))
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import _LANGUAGE_CODES, Tokenizer

        self.storage = ctranslate2.StorageView
        # `replicas`: decodes run side by side (CTranslate2's inter_threads; one replica runs one
        # decode at a time, whatever the threads that ask).
        self.model = WhisperModel(directory, device="cpu", compute_type="int8", cpu_threads=threads, num_workers=replicas)
        self.multilingual = self.model.model.is_multilingual
        self.make_tokenizer = lambda language: Tokenizer(self.model.hf_tokenizer, self.multilingual, task="transcribe", language=language)
        # A tokenizer and its prompt per language heard (at most `languages`' hundred, a few KB each).
        self.prompts = {}
        self.tokenizer = self.make_tokenizer("en")
        # Whisper's languages, by the codes the Realtime API's `transcription.language` takes.
        self.languages = frozenset(_LANGUAGE_CODES)

    def prompt(self, language):
        """The decoder's prompt for `language`, without timestamps: the words alone."""
        prompt = self.prompts.get(language)
        if prompt is None:
            tokenizer = self.make_tokenizer(language)
            prompt = self.prompts[language] = list(tokenizer.sot_sequence) + [tokenizer.no_timestamps]
        return prompt

    def language_of(self, language):
        """The language a decode is made in: English on tiny.en whatever is asked; on a
        multilingual model the one asked, or None (found from the audio)."""
        if not self.multilingual:
            return "en"
        if language is not None and language not in self.languages:
            raise Refusal("bad_request", f"language {language!r} is not one of Whisper's (ISO-639-1: en, es, de, fr, ...)")
        return language

    # Whisper's encoder reads a window of up to 30 s of log-mel frames, and faster-whisper pads
    # every clip with quiet to the whole 30 s; CTranslate2 encodes a shorter window as readily, at
    # a cost that grows with it. A `fast` request (the server's periodic partials, nobody waits on
    # them), under WINDOW_SECONDS less one of audio, pads the turn to WINDOW_SECONDS instead: a
    # third of the CPU (96 ms a clip against 313 on the 210 clips of docs/benchmarks.md, "Moonshine
    # base against Whisper tiny.en", where it even erred less, 6.5 % WER against 8.4 %). A decode
    # that may be the final text (the one at the turn's quiet, and the final) reads the whole
    # window all the same: on the short one Whisper hears Piper's "Paris" as "pairs" (3 of 7
    # readings; the builtin-agent eval asked for the weather in "pairs" when the finals were
    # moved to it), and tools and the history are made from the final text.
    WINDOW_SECONDS = 15
    # Whisper on a short window sometimes says the turn again ("Hello there. Hello there."): its
    # text is bounded by the audio's length (six tokens a second is past fast speech) and a
    # repeat of what was already said is cut (without_repeats).
    TOKENS_PER_SECOND = 6
    # The whole window's bound, in every language: Whisper's tokens of Spanish, German, French and
    # Italian run two to three times English's a second, and a decode that loops ("Maiden, Maiden,
    # …", Whisper base on espeak-ng's Italian) ran to Whisper's 448 and past the server's 10 s
    # (issue 75); at twelve a second no sentence is cut, and a loop ends where the speech does.
    WHOLE_TOKENS_PER_SECOND = 12
    # faster-whisper's own temperatures, tried in turn while a decode reads as a loop or unsure.
    FALLBACK = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    # Beam search's width. Greedy decoding (1) was measured on the same 210 clips (docs/benchmarks.md,
    # "Moonshine base against Whisper tiny.en"): 11.9 % WER against 8.4 % for about 7 % less CPU.
    BEAM_SIZE = 5

    def found(self, encoded, candidates):
        """The language Whisper's language tokens find on `encoded` (faster-whisper's own way),
        and how sure: among `candidates` only when a server names the languages it expects, with
        the probability as a share of theirs. Over all its languages Whisper base took espeak-ng's
        French and Italian for Thai and Japanese; among en, es, de, fr and it it was right on 125
        of 150 clips (en 30, es 26, de 25, fr 21, it 23), and at the server's share of 0.75 on 91,
        wrong on 5 (docs/benchmarks.md, "Languages")."""
        ranked = self.model.model.detect_language(encoded)[0]
        if not candidates:
            token, probability = ranked[0]
            return token[2:-2], probability
        probabilities = {token[2:-2]: probability for token, probability in ranked}
        best = max(candidates, key=lambda code: probabilities.get(code, 0.0))
        total = sum(probabilities.get(code, 0.0) for code in candidates)
        return best, (probabilities.get(best, 0.0) / total if total > 0 else 0.0)

    def transcribe(self, pcm, rate, fast=False, language=None, candidates=None):
        language = self.language_of(language)
        audio = Onset.cut(to_16k(pcm, rate))
        if len(audio) < RATE // 10:
            return Decoded("", None)
        seconds = len(audio) / RATE
        whole = not fast or seconds > self.WINDOW_SECONDS - 1
        found = None
        if whole and language is None and candidates and self.multilingual:
            # Found among the server's languages first (an encode of the window's first 30 s, as
            # faster-whisper's own finding does), then decoded in it.
            features = self.model.feature_extractor(np.concatenate([audio[: 30 * RATE], np.zeros(max(0, 30 * RATE - len(audio)), np.float32)]))
            encoded = self.model.model.encode(self.storage.from_array(np.ascontiguousarray(features[:, :3000][None])), to_cpu=False)
            language, probability = self.found(encoded, candidates)
            found = (language, round(probability, 3))
        if whole:
            # The whole window, by faster-whisper (its own 30 s chunking past one). No VAD of its
            # own (Parley's has cut the turn), no carried context (each request is a whole turn).
            # Its own rules matter: the same decode made here (its features padded as it pads them,
            # its suppressed tokens and beam, without its temperature fallback and no-speech rule)
            # cost the same on 210 clips (8.7 % WER either way) and heard a hum and a breath as
            # "Okay." where faster-whisper hears nothing (docs/benchmarks.md, "Talkers").
            most = min(220, 8 + int(min(seconds, 30) * self.WHOLE_TOKENS_PER_SECOND))
            # Beam search alone in a language other than English: faster-whisper's fallback samples
            # at rising temperatures when a decode's log-probability is low, as it is on espeak-ng's
            # voices of other languages, and the same clip read differently from run to run (one
            # German turn 0.6 and 1.0 WER; offline, beam alone erred as much: es 50.5 % against
            # 49.0, de 32.9 either way). English keeps the fallback its figures were measured with.
            temperature = [0.0] if self.multilingual and language != "en" else self.FALLBACK
            segments, info = self.model.transcribe(audio, language=language, beam_size=self.BEAM_SIZE, vad_filter=False,
                                                   condition_on_previous_text=False, without_timestamps=True, max_new_tokens=most,
                                                   temperature=temperature)
            segments = list(segments)
            tokens = sum(len(segment.tokens) for segment in segments)
            confidence = None
            if tokens:
                confidence = Confidence(sum(segment.avg_logprob * len(segment.tokens) for segment in segments) / tokens,
                                        segments[0].no_speech_prob)
            heard_in = found or (info.language, round(info.language_probability, 3))
            return Decoded("".join(segment.text for segment in segments).strip(), confidence, *heard_in)
        # Padded as audio, not as features, so the log-mel's level is the clip's own.
        padded = np.zeros(self.WINDOW_SECONDS * RATE, dtype=np.float32)
        padded[: len(audio)] = audio
        features = np.ascontiguousarray(self.model.feature_extractor(padded)[:, : self.WINDOW_SECONDS * 100][None])
        encoded = self.model.model.encode(self.storage.from_array(features), to_cpu=False)
        probability = 1.0
        if language is None:
            language, probability = self.found(encoded, candidates)
        prompt = self.prompt(language)
        limit = min(224, len(prompt) + 8 + int(seconds * self.TOKENS_PER_SECOND))
        result = self.model.model.generate(encoded, [prompt], beam_size=self.BEAM_SIZE, max_length=limit,
                                           suppress_blank=True, suppress_tokens=[-1], return_scores=True,
                                           return_no_speech_prob=True)[0]
        tokens = [t for t in result.sequences_ids[0] if t < self.tokenizer.eot]
        # CTranslate2's score is the hypothesis' log-probability over its length; faster-whisper's
        # average counts the end token too (its `avg_logprob`), and so does this one.
        confidence = Confidence(result.scores[0] * len(tokens) / (len(tokens) + 1), result.no_speech_prob) if tokens else None
        return Decoded(without_repeats(self.tokenizer.decode(tokens).strip()), confidence, language, round(probability, 3))


class Onset:
    """Where a turn's speech begins and ends in its window, at the sample: the window the server
    sends starts on its VAD's 32 ms grid less the prefix padding, so the same sentence said 8 to
    32 ms later reached Whisper at another offset in its 10 ms feature frames, and on a noisy line
    that changed the words of 9 sentences in 19 (issue 74). Cut at a level of the window's own
    energy (a 10 ms mean of squares, taken at every sample, so that speech moved by n samples
    moves the cut by n), less PAD before and plus TAIL after, Whisper reads the same samples
    wherever the grid fell."""

    FRAME = 160  # 10 ms at 16 kHz
    # Measured with `make bench-hearing` (tiny.en, the noisy line, five phases, 2026-11-29): the
    # windows as they came, median 46.0 % and spread 7.2 points; cut 200 ms before and 300 ms
    # after, 43.7 % and 4.1; 100 ms after, 44.4 % and 6.1 (the window then often ended before the
    # cut, where the VAD's grid and the loop's batch put it).
    PAD = 200 * RATE // 1000
    TAIL = 300 * RATE // 1000
    # The window's floor (its quietest tenth of 10 ms energies, of full scale 1) at which it is cut:
    # -50 dBFS. Pink noise 10 dB under speech sits near -31; a clean recording's near silence.
    NOISY_FLOOR = 1e-5

    @classmethod
    def cut(cls, audio):
        if len(audio) < 4 * cls.FRAME:
            return audio
        squares = np.cumsum(np.concatenate(([0.0], audio.astype(np.float64) ** 2)))
        energy = (squares[cls.FRAME:] - squares[:-cls.FRAME]) / cls.FRAME
        floor, peak = np.percentile(energy, 10), energy.max()
        if floor < cls.NOISY_FLOOR:
            # A quiet line: its windows begin and end in silence, where the grid moves nothing
            # (clean sentences did not flip, issue 74), and cut they did change words: Whisper
            # heard Piper joe's "Paris" as "pairs" in the tools eval (`make test`).
            return audio
        if peak < 4 * floor:
            return audio  # no speech clearly above the line: the window as it came
        # Halfway from the floor to the peak, in decibels: pink noise's 10 ms energy alone swings
        # past a quarter of the way.
        level = floor * (peak / floor) ** 0.5
        loud = np.flatnonzero(energy >= level)
        start = max(0, int(loud[0]) - cls.PAD)
        end = min(len(audio), int(loud[-1]) + cls.FRAME + cls.TAIL)
        return audio[start:end]


def without_repeats(text):
    """The text up to where it starts to say again what it has said: "Hello there. Hello there."
    is "Hello there."; "Good morning, how are you? Good morning," is its first sentence."""
    def letters(s):
        return "".join(c for c in s.lower() if c.isalnum())

    parts = re.split(r"(?<=[.?!])\s+", text)
    kept = [parts[0]]
    for part in parts[1:]:
        if letters(part) and letters(" ".join(kept)).startswith(letters(part)):
            break
        kept.append(part)
    return " ".join(kept)


class Piper:
    """A Piper voice: text in, 22,050 Hz pcm16 out, a clause at a time so that the first sound
    leaves before the sentence is made (Piper itself works a sentence at a time)."""

    NAME = "piper-joe-medium"
    # A clause boundary: after , ; : or a dash, before the next word. A piece of fewer than three
    # words stays with the next, so the voice does not stop after "Well," or "Yes,".
    CLAUSE = re.compile(r"(?<=[,;:—])\s+")

    # Two threads for a synthesis, not one: the first clause of "Sure, the weather in Paris is sunny
    # today, with a light breeze." came in 115 to 152 ms on two, 195 to 263 ms on one, for the
    # same CPU (210 to 250 ms the sentence); the first clause is what a user waits on.
    THREADS = 2

    def __init__(self, path, threads=THREADS):
        import json

        from piper import PiperVoice
        from piper.config import PiperConfig

        # PiperVoice.load would make its session with ONNX Runtime's defaults (a thread per core,
        # spinning, the arena); the voice is the same made from the helper's own session.
        with open(f"{path}.json", encoding="utf-8") as config:
            self.voice = PiperVoice(config=PiperConfig.from_dict(json.load(config)), session=onnx_session(path, threads))
        self.rate = self.voice.config.sample_rate

    def clauses(self, text):
        pieces, held = [], ""
        for piece in self.CLAUSE.split(text.strip()):
            held = f"{held} {piece}".strip() if held else piece
            if len(held.split()) >= 3:
                pieces.append(held)
                held = ""
        if held:
            pieces.append(held)
        return pieces

    def speak(self, text, speed, cancelled):
        from piper import SynthesisConfig

        # Piper's length_scale is the inverse of speed (2 is half as fast).
        config = SynthesisConfig(length_scale=1.0 / max(0.25, min(4.0, speed)))
        for clause in self.clauses(text):
            for chunk in self.voice.synthesize(clause, config):
                if cancelled():
                    return
                yield chunk.audio_int16_bytes


def half_band_taps(half=16, beta=8.0):
    """The odd phase of a windowed-sinc interpolator by 2 (Kaiser window, 2 x `half` taps): the
    sample halfway between x[n] and x[n+1] from x[n-half+1] ... x[n+half]. The even phase is the
    input itself. Cut-off at the input's Nyquist (4 kHz for a phone line), so no image of the
    speech band lands in 4-8 kHz, where Whisper's log-mel reads it as sound; linear interpolation's
    images there are attenuated by only 10 to 25 dB."""
    offsets = np.arange(-half + 1, half + 1) - 0.5
    window = np.kaiser(2 * half, beta)
    taps = np.sinc(offsets) * window
    return (taps / taps.sum()).astype(np.float32)


HALF_BAND = half_band_taps()


def upsample_2x(audio):
    """`audio` (float32) at twice its rate, band-limited to its own Nyquist (`half_band_taps`)."""
    half = len(HALF_BAND) // 2
    padded = np.pad(audio, (half - 1, half))
    out = np.empty(2 * len(audio), dtype=np.float32)
    out[0::2] = audio
    out[1::2] = np.correlate(padded, HALF_BAND, mode="valid")
    return out


def to_16k(pcm, rate):
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if rate == 8000:
        # Telephone audio: to 16 kHz through a band-limited interpolator (docs/benchmarks.md,
        # "Telephone audio": word error rates on noisy G.711 with it and with linear interpolation).
        return upsample_2x(audio)
    if rate != RATE:
        raise Refusal("bad_request", f"rate {rate} is not 16000 or 8000")
    return audio
