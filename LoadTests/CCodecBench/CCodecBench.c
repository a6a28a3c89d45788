#include <stdlib.h>
#include <opus.h>
#include "CCodecBench.h"

long parley_bench_decode(const unsigned char *bytes, const int *lengths, int count, int rounds,
                         int sample_rate, int channels) {
    int error = 0;
    OpusDecoder *decoder = opus_decoder_create(sample_rate, channels, &error);
    if (error != OPUS_OK) return error;
    // 120 ms at 48 kHz stereo: enough for any packet.
    static opus_int16 pcm[5760 * 2];
    long frames = 0;
    for (int r = 0; r < rounds; r++) {
        const unsigned char *packet = bytes;
        for (int i = 0; i < count; i++) {
            int n = opus_decode(decoder, packet, lengths[i], pcm, 5760, 0);
            if (n < 0) { opus_decoder_destroy(decoder); return n; }
            packet += lengths[i];
            frames++;
        }
    }
    opus_decoder_destroy(decoder);
    return frames;
}

long parley_bench_encode(const short *pcm, int frames, int frame_samples, int rounds,
                         int sample_rate, int channels, int bitrate, int complexity) {
    int error = 0;
    OpusEncoder *encoder = opus_encoder_create(sample_rate, channels, OPUS_APPLICATION_VOIP, &error);
    if (error != OPUS_OK) return error;
    opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
    opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(complexity));
    opus_encoder_ctl(encoder, OPUS_SET_SIGNAL(OPUS_SIGNAL_VOICE));
    static unsigned char packet[4000];
    long encoded = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < frames; i++) {
            int n = opus_encode(encoder, pcm + (long)i * frame_samples * channels, frame_samples, packet, sizeof packet);
            if (n < 0) { opus_encoder_destroy(encoder); return n; }
            encoded++;
        }
    }
    opus_encoder_destroy(encoder);
    return encoded;
}
