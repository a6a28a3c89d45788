#include "CEspeak.h"
#include <dlfcn.h>
#include <pthread.h>
#include <espeak-ng/speak_lib.h>
#include <stdio.h>
#include <string.h>

// The functions Parley calls, resolved from the library once it is open.
static struct {
    int (*Initialize)(espeak_AUDIO_OUTPUT, int, const char *, int);
    void (*SetSynthCallback)(t_espeak_callback *);
    espeak_ERROR (*SetVoiceByName)(const char *);
    espeak_ERROR (*SetParameter)(espeak_PARAMETER, int, int);
    espeak_ERROR (*Synth)(const void *, size_t, unsigned int, espeak_POSITION_TYPE, unsigned int, unsigned int,
                          unsigned int *, void *);
} espeak;

_Static_assert(sizeof espeak == 5 * sizeof(void *), "one name for each function");

static parley_espeak_sink current_sink;
static pthread_mutex_t installing = PTHREAD_MUTEX_INITIALIZER;

int parley_espeak_load(const char *soname, char *error, size_t capacity) {
    // RTLD_NOW: a library missing a symbol fails here, with the reason, not at a first call.
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, capacity, "%s", dlerror());
        return -1;
    }
    static const char *const names[] = {"espeak_Initialize", "espeak_SetSynthCallback", "espeak_SetVoiceByName",
                                        "espeak_SetParameter", "espeak_Synth"};
    void *found[sizeof names / sizeof *names];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        found[i] = dlsym(library, names[i]);
        if (!found[i]) {
            snprintf(error, capacity, "%s has no %s", soname, names[i]);
            dlclose(library);
            return -1;
        }
    }
    // The first library loaded stays the one called; a later load of it only adds a reference.
    pthread_mutex_lock(&installing);
    if (!espeak.Synth) memcpy(&espeak, found, sizeof espeak);
    pthread_mutex_unlock(&installing);
    return 0;
}

// espeak-ng's callback: the user data is the one given to espeak_Synth.
static int collect(short *wav, int count, espeak_EVENT *events) {
    if (!events || !current_sink) return 0;
    return current_sink(wav, count, events->user_data);
}

int parley_espeak_initialize(parley_espeak_sink sink) {
    int rate = espeak.Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, 0);
    if (rate <= 0) return rate;
    current_sink = sink;
    espeak.SetSynthCallback(collect);
    return rate;
}

int parley_espeak_set_voice(const char *name) { return espeak.SetVoiceByName(name) == EE_OK ? 0 : -1; }

int parley_espeak_set_rate(int words_per_minute) {
    return espeak.SetParameter(espeakRATE, words_per_minute, 0) == EE_OK ? 0 : -1;
}

int parley_espeak_synth(const char *text, void *user) {
    espeak_ERROR result = espeak.Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, user);
    return result == EE_OK ? 0 : (int)result;
}
