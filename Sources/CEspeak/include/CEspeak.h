#ifndef PARLEY_CESPEAK_H
#define PARLEY_CESPEAK_H

#include <stddef.h>

// libespeak-ng, loaded with dlopen when first used rather than linked: linked, its tree
// (libpcaudio → PulseAudio, ALSA, X11, systemd, gcrypt, FLAC, Vorbis, LAME; Parley never uses its
// audio output) cost every server about 2 MB of resident pages at start, speaking or not.
// Only Sources/Speech/Espeak.swift calls these; the library's own header stays in CEspeak.c.

/// The samples of one synthesis, and the `user` pointer given to parley_espeak_synth.
typedef int (*parley_espeak_sink)(short *samples, int count, void *user);

/// Opens `soname` and resolves the functions Parley calls. 0 when loaded;
/// -1 with the reason in `error` (nul-terminated, at most `capacity` bytes) when it cannot be, and
/// nothing else changes. Thread-safe; the first library loaded is the one the
/// functions below call.
int parley_espeak_load(const char *soname, char *error, size_t capacity);

// Each of these needs a successful parley_espeak_load first.

/// espeak_Initialize for synchronous synthesis into `sink`: the sample rate, or ≤ 0.
int parley_espeak_initialize(parley_espeak_sink sink);
/// espeak_SetVoiceByName: 0 when the voice is set.
int parley_espeak_set_voice(const char *name);
/// espeak_SetParameter(espeakRATE, …): 0 when set.
int parley_espeak_set_rate(int words_per_minute);
/// espeak_Synth of nul-terminated UTF-8 `text`, its samples to the sink with `user`: 0 when spoken.
int parley_espeak_synth(const char *text, void *user);

#endif
