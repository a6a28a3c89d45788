#include "CPocketSphinx.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
// sphinxbase's headers are found through the multiarch include directory (no flags needed).
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/feat.h>

// pocketsphinx.h itself needs -I/usr/include/pocketsphinx, which only pkg-config's flags gave, and
// those link the library; the five functions it declares that Parley calls (pocketsphinx
// 5prealpha, Debian's libpocketsphinx3), with the decoder opaque.
typedef struct parley_sphinx_decoder ps_decoder_t;

static struct {
    arg_t const *(*ps_args)(void);
    ps_decoder_t *(*ps_init)(cmd_ln_t *);
    int (*ps_free)(ps_decoder_t *);
    int (*ps_start_utt)(ps_decoder_t *);
    int (*ps_end_utt)(ps_decoder_t *);
    int (*ps_process_raw)(ps_decoder_t *, int16 const *, size_t, int, int);
    char const *(*ps_get_hyp)(ps_decoder_t *, int32 *);
    feat_t *(*ps_get_feat)(ps_decoder_t *);
    cmd_ln_t *(*cmd_ln_parse_r)(cmd_ln_t *, arg_t const *, int32, char **, int32);
    int (*cmd_ln_free_r)(cmd_ln_t *);
    void (*cmn_live_get)(cmn_t *, mfcc_t *);
    void (*cmn_live_set)(cmn_t *, mfcc_t const *);
} sphinx;

#define COUNT(a) (sizeof(a) / sizeof *(a))

// Swift hands the cepstral mean over as floats.
_Static_assert(sizeof(mfcc_t) == sizeof(float), "sphinxbase built without FIXED_POINT");

int parley_sphinx_load(const char *soname, char *error, size_t capacity) {
    // RTLD_NOW: a library missing a symbol fails here, with the reason, not at a first call.
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, capacity, "%s", dlerror());
        return -1;
    }
    // In the table's order; dlsym on the handle also searches libsphinxbase, its dependency.
    static const char *const names[] = {"ps_args", "ps_init", "ps_free", "ps_start_utt", "ps_end_utt",
                                        "ps_process_raw", "ps_get_hyp", "ps_get_feat", "cmd_ln_parse_r",
                                        "cmd_ln_free_r", "cmn_live_get", "cmn_live_set"};
    _Static_assert(sizeof sphinx == COUNT(names) * sizeof(void *), "one name for each function");
    void *found[COUNT(names)];
    for (size_t i = 0; i < COUNT(names); i++) {
        found[i] = dlsym(library, names[i]);
        if (!found[i]) {
            snprintf(error, capacity, "%s has no %s", soname, names[i]);
            dlclose(library);
            return -1;
        }
    }
    // The first library loaded stays the one called; a later load of it only adds a reference.
    static pthread_mutex_t installing = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&installing);
    if (!sphinx.cmn_live_set) memcpy(&sphinx, found, sizeof sphinx);
    pthread_mutex_unlock(&installing);
    return 0;
}

parley_sphinx_decoder *parley_sphinx_decoder_new(int argc, char **argv, int *refused) {
    *refused = 0;
    cmd_ln_t *config = sphinx.cmd_ln_parse_r(NULL, sphinx.ps_args(), argc, argv, 1);
    if (!config) {
        *refused = 1;
        return NULL;
    }
    // ps_init keeps its own reference to the settings.
    ps_decoder_t *decoder = sphinx.ps_init(config);
    sphinx.cmd_ln_free_r(config);
    return decoder;
}

void parley_sphinx_decoder_free(parley_sphinx_decoder *decoder) { sphinx.ps_free(decoder); }
void parley_sphinx_start(parley_sphinx_decoder *decoder) { sphinx.ps_start_utt(decoder); }
void parley_sphinx_end(parley_sphinx_decoder *decoder) { sphinx.ps_end_utt(decoder); }

void parley_sphinx_process(parley_sphinx_decoder *decoder, const int16_t *samples, size_t count) {
    sphinx.ps_process_raw(decoder, samples, count, 0, 0);
}

const char *parley_sphinx_hypothesis(parley_sphinx_decoder *decoder) {
    int32 score = 0;
    return sphinx.ps_get_hyp(decoder, &score);
}

static cmn_t *live_mean(parley_sphinx_decoder *decoder) {
    feat_t *feat = sphinx.ps_get_feat(decoder);
    return feat ? feat->cmn_struct : NULL;
}

int parley_sphinx_mean_length(parley_sphinx_decoder *decoder) {
    cmn_t *cmn = live_mean(decoder);
    return cmn ? cmn->veclen : 0;
}

void parley_sphinx_mean_get(parley_sphinx_decoder *decoder, float *mean) {
    cmn_t *cmn = live_mean(decoder);
    if (cmn) sphinx.cmn_live_get(cmn, mean);
}

void parley_sphinx_mean_set(parley_sphinx_decoder *decoder, const float *mean) {
    cmn_t *cmn = live_mean(decoder);
    if (cmn) sphinx.cmn_live_set(cmn, mean);
}
