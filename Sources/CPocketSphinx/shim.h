#include <pocketsphinx.h>
// cmn_live_get/set: the decoder keeps a cepstral mean per source rate (SphinxDecoder).
#include <sphinxbase/cmn.h>
