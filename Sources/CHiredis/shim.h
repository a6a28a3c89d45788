// hiredis's synchronous types (replies, the context) and its async API, which Store drives from
// Parley's event loops (Sources/Store/Hiredis.swift).
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
