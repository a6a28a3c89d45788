// The baseline for `parley-load codec`: libopus driven by a plain C loop, so that the Swift
// wrapper's cost can be measured against nothing but libopus itself, in the same process and run.
#ifndef PARLEY_CCODECBENCH_H
#define PARLEY_CCODECBENCH_H

// Decodes `count` packets (laid end to end in `bytes`, with `lengths`) `rounds` times through one
// decoder; returns the frames decoded, or a negative libopus error.
long parley_bench_decode(const unsigned char *bytes, const int *lengths, int count, int rounds,
                         int sample_rate, int channels);

// Encodes `frames` frames of `frame_samples` samples per channel from `pcm`, `rounds` times,
// through one encoder (VoIP, the given bitrate and complexity); returns the frames encoded, or a
// negative libopus error.
long parley_bench_encode(const short *pcm, int frames, int frame_samples, int rounds,
                         int sample_rate, int channels, int bitrate, int complexity);

#endif
