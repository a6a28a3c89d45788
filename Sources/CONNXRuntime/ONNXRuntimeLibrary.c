// ONNX Runtime's C API through dlopen: the onnxruntime wheel (PyPI, MIT) ships libonnxruntime.so
// with its C API but no header, and linking it would map 20 MiB into a server that never hears a
// microphone. Its API is one table of functions (`OrtApi`) reached from OrtGetApiBase; the table's
// order is ONNX Runtime's ABI, fixed since 1.0 (new functions are only ever appended), so a call is
// the function at its index. The indices below are those of onnxruntime_c_api.h's `struct OrtApi`.
#include "CONNXRuntime.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;

typedef struct {
    const void *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtApiBase;

// Any version up to the library's own gives the same table: 16 (1.16) has every function used here.
enum { api_version = 16 };
// Their places in the table.
enum {
    i_GetErrorMessage = 2, i_CreateEnv = 3, i_CreateSession = 7, i_Run = 9, i_CreateSessionOptions = 10,
    i_SetSessionExecutionMode = 13, i_SetSessionGraphOptimizationLevel = 23, i_SetIntraOpNumThreads = 24,
    i_SetInterOpNumThreads = 25, i_CreateTensorWithDataAsOrtValue = 49, i_CreateCpuMemoryInfo = 69,
    i_ReleaseEnv = 92, i_ReleaseStatus = 93, i_ReleaseMemoryInfo = 94, i_ReleaseSession = 95,
    i_ReleaseValue = 96, i_ReleaseSessionOptions = 100,
};
// ONNX's element types, OrtLoggingLevel's "error", OrtAllocatorType's and OrtMemType's defaults.
enum { float_type = 1, int64_type = 7, logging_error = 3, arena_allocator = 1, mem_type_default = 0, all_optimizations = 99 };

static void *const *api;
static OrtEnv *environment;
static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

#define CALL(name, type) ((type)api[i_##name])

// An OrtStatus's message into `error`, and the status released; -1.
static int failed(OrtStatus *status, const char *what, char *error, size_t capacity) {
    const char *message = CALL(GetErrorMessage, const char *(*)(const OrtStatus *))(status);
    snprintf(error, capacity, "%s: %s", what, message ? message : "unknown error");
    CALL(ReleaseStatus, void (*)(OrtStatus *))(status);
    return -1;
}

// Under `loading`: opens `path` and sets up the API and the environment, or says why not in `why`.
static int load(const char *path, char *why, size_t capacity) {
    // RTLD_LOCAL: its names (protobuf's among them) stay out of the process's namespace.
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(why, capacity, "%s", dlerror());
        return -1;
    }
    const OrtApiBase *(*get_base)(void) = (const OrtApiBase *(*)(void))dlsym(library, "OrtGetApiBase");
    const void *table = get_base ? get_base()->GetApi(api_version) : NULL;
    if (!table) {
        snprintf(why, capacity, "%s is not ONNX Runtime %d or later (no OrtGetApiBase, or no API version %d)", path, api_version, api_version);
        dlclose(library);
        return -1;
    }
    api = (void *const *)table;
    OrtStatus *status = CALL(CreateEnv, OrtStatus *(*)(int, const char *, OrtEnv **))(logging_error, "parley", &environment);
    if (status) return failed(status, "CreateEnv", why, capacity);
    // The library stays open for the process's life: ONNX Runtime keeps globals dlclose would strand.
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
    return 0;
}

// The first library that loads is the process's; a path that fails may be followed by another.
int parley_ort_load(const char *path, char *error, size_t capacity) {
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
    pthread_mutex_lock(&loading);
    int result = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) ? 0 : load(path, error, capacity);
    pthread_mutex_unlock(&loading);
    return result;
}

struct parley_ort_session {
    OrtSession *session;
    OrtMemoryInfo *memory;
};

parley_ort_session *parley_ort_session_new(const char *model_path, char *error, size_t capacity) {
    if (!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) {
        snprintf(error, capacity, "ONNX Runtime is not loaded");
        return NULL;
    }
    OrtSessionOptions *options = NULL;
    OrtStatus *status = CALL(CreateSessionOptions, OrtStatus *(*)(OrtSessionOptions **))(&options);
    if (status) return failed(status, "CreateSessionOptions", error, capacity), NULL;
    // One thread each: the run happens on the caller's (a loop's) thread, and none is made.
    if ((status = CALL(SetIntraOpNumThreads, OrtStatus *(*)(OrtSessionOptions *, int))(options, 1)) ||
        (status = CALL(SetInterOpNumThreads, OrtStatus *(*)(OrtSessionOptions *, int))(options, 1)) ||
        (status = CALL(SetSessionExecutionMode, OrtStatus *(*)(OrtSessionOptions *, int))(options, 0)) ||
        (status = CALL(SetSessionGraphOptimizationLevel, OrtStatus *(*)(OrtSessionOptions *, int))(options, all_optimizations))) {
        CALL(ReleaseSessionOptions, void (*)(OrtSessionOptions *))(options);
        return failed(status, "session options", error, capacity), NULL;
    }
    parley_ort_session *made = calloc(1, sizeof *made);
    if (!made) {
        CALL(ReleaseSessionOptions, void (*)(OrtSessionOptions *))(options);
        snprintf(error, capacity, "out of memory");
        return NULL;
    }
    status = CALL(CreateSession, OrtStatus *(*)(OrtEnv *, const char *, const OrtSessionOptions *, OrtSession **))(
        environment, model_path, options, &made->session);
    CALL(ReleaseSessionOptions, void (*)(OrtSessionOptions *))(options);
    if (!status) status = CALL(CreateCpuMemoryInfo, OrtStatus *(*)(int, int, OrtMemoryInfo **))(arena_allocator, mem_type_default, &made->memory);
    if (status) {
        parley_ort_session_free(made);
        return failed(status, "CreateSession", error, capacity), NULL;
    }
    return made;
}

void parley_ort_session_free(parley_ort_session *session) {
    if (!session) return;
    if (session->session) CALL(ReleaseSession, void (*)(OrtSession *))(session->session);
    if (session->memory) CALL(ReleaseMemoryInfo, void (*)(OrtMemoryInfo *))(session->memory);
    free(session);
}

// The most inputs or outputs a run takes: Silero's three and two, with room.
enum { most_tensors = 8 };

static OrtStatus *wrap(parley_ort_session *session, const parley_ort_tensor *tensor, OrtValue **value) {
    size_t elements = 1;
    for (size_t i = 0; i < tensor->rank; i++) elements *= (size_t)tensor->shape[i];
    size_t bytes = elements * (tensor->is_int64 ? sizeof(int64_t) : sizeof(float));
    return CALL(CreateTensorWithDataAsOrtValue, OrtStatus *(*)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, OrtValue **))(
        session->memory, tensor->data, bytes, tensor->shape, tensor->rank, tensor->is_int64 ? int64_type : float_type, value);
}

int parley_ort_run(parley_ort_session *session, const parley_ort_tensor *inputs, size_t input_count,
                   const parley_ort_tensor *outputs, size_t output_count, char *error, size_t capacity) {
    if (input_count > most_tensors || output_count > most_tensors) {
        snprintf(error, capacity, "more than %d inputs or outputs", most_tensors);
        return -1;
    }
    OrtValue *values[2 * most_tensors] = {0};
    const char *names[2 * most_tensors];
    OrtStatus *status = NULL;
    size_t made = 0;
    for (; made < input_count + output_count && !status; made++) {
        const parley_ort_tensor *tensor = made < input_count ? &inputs[made] : &outputs[made - input_count];
        names[made] = tensor->name;
        status = wrap(session, tensor, &values[made]);
    }
    if (!status) {
        status = CALL(Run, OrtStatus *(*)(OrtSession *, const void *, const char *const *, const OrtValue *const *, size_t,
                                          const char *const *, size_t, OrtValue **))(
            session->session, NULL, names, (const OrtValue *const *)values, input_count, names + input_count, output_count,
            values + input_count);
    }
    for (size_t i = 0; i < input_count + output_count; i++) {
        if (values[i]) CALL(ReleaseValue, void (*)(OrtValue *))(values[i]);
    }
    return status ? failed(status, "Run", error, capacity) : 0;
}
