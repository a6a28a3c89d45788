#ifndef PARLEY_CPOCKETSPHINX_H
#define PARLEY_CPOCKETSPHINX_H

#include <stddef.h>
#include <stdint.h>

// libpocketsphinx (and libsphinxbase under it), loaded with dlopen when first used rather than
// linked: linked, its tree (LAPACK, BLAS, gfortran, quadmath) cost every server about 1 MB of
// resident pages at start, recognising or not. Only Sources/Speech/SphinxDecoder.swift calls these;
// the libraries' own declarations stay in CPocketSphinx.c.

/// A decoder (pocketsphinx's ps_decoder_t).
typedef struct parley_sphinx_decoder parley_sphinx_decoder;

/// Opens `soname` and resolves the functions Parley calls (libsphinxbase's through it, its
/// dependency). 0 when loaded; -1 with the reason in `error`
/// (nul-terminated, at most `capacity` bytes) when it cannot be, and nothing else changes. Thread-safe;
/// the first library loaded is the one the functions below call.
int parley_sphinx_load(const char *soname, char *error, size_t capacity);

// Each of these needs a successful parley_sphinx_load first.

/// A decoder for command-line style settings (`argv[0]` is ignored), or NULL when the settings
/// are refused (*refused = 1) or the model cannot be loaded (*refused = 0).
parley_sphinx_decoder *parley_sphinx_decoder_new(int argc, char **argv, int *refused);
void parley_sphinx_decoder_free(parley_sphinx_decoder *decoder);
void parley_sphinx_start(parley_sphinx_decoder *decoder);
void parley_sphinx_end(parley_sphinx_decoder *decoder);
void parley_sphinx_process(parley_sphinx_decoder *decoder, const int16_t *samples, size_t count);
/// The best hypothesis so far, owned by the decoder; NULL when there is none.
const char *parley_sphinx_hypothesis(parley_sphinx_decoder *decoder);
/// The length of the live cepstral mean (0 when the decoder has none).
int parley_sphinx_mean_length(parley_sphinx_decoder *decoder);
/// Copies the live cepstral mean out (`mean` holds parley_sphinx_mean_length floats).
void parley_sphinx_mean_get(parley_sphinx_decoder *decoder, float *mean);
/// Sets the live cepstral mean (`mean` holds parley_sphinx_mean_length floats).
void parley_sphinx_mean_set(parley_sphinx_decoder *decoder, const float *mean);

#endif
