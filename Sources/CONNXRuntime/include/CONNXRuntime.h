// ONNX Runtime's C API, the little of it Parley uses, opened with dlopen from the onnxruntime wheel
// (ONNXRuntimeLibrary.c). Sources/Speech/ONNXRuntime.swift is the one Swift file that calls it.
#ifndef PARLEY_CONNXRUNTIME_H
#define PARLEY_CONNXRUNTIME_H

#include <stddef.h>
#include <stdint.h>

// Opens the library at `path`, on any thread: the first that loads is the process's for good, and
// later calls return 0 at once. 0 when it is open; -1 with the reason in `error` (nul-terminated,
// at most `capacity` bytes), after which another path may be tried.
int parley_ort_load(const char *path, char *error, size_t capacity);

// One model's session, run on the caller's thread alone: one intra-op and one inter-op thread
// (ONNX Runtime then makes no thread of its own), sequential execution. NULL with the reason.
typedef struct parley_ort_session parley_ort_session;
parley_ort_session *parley_ort_session_new(const char *model_path, char *error, size_t capacity);
void parley_ort_session_free(parley_ort_session *session);

// A float tensor (or, with `is_int64`, one int64) the caller owns: data, its shape and rank.
typedef struct {
    const char *name;
    void *data;
    const int64_t *shape;
    size_t rank;
    int is_int64;
} parley_ort_tensor;

// Runs the session with `inputs`, writing into `outputs` (the caller's buffers, of the shapes the
// model gives them). 0, or -1 with the reason.
int parley_ort_run(parley_ort_session *session, const parley_ort_tensor *inputs, size_t input_count,
                   const parley_ort_tensor *outputs, size_t output_count, char *error, size_t capacity);

#endif
