#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a destructor pointer, which Swift cannot import: the
// bind calls that must copy the caller's bytes (Swift strings do not outlive the call) pass this.
static inline sqlite3_destructor_type parley_sqlite_transient(void) { return SQLITE_TRANSIENT; }
