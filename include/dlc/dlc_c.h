/*===- dlc_c.h - the C API: load a compiled model file and run it ------------===*
 *
 * For programs in C and for other languages' bindings. Everything is an opaque handle;
 * a function that can fail returns 0 on success and otherwise a nonzero code, and sets
 * `*error` (when `error` is not NULL) to an error the caller frees with
 * dlc_error_free(). Tensors cross the API as contiguous host buffers of the model's
 * dtype and shape (row-major). A loaded model may be run from several threads at once.
 *
 *   dlc_model *model;
 *   dlc_error *error = NULL;
 *   if (dlc_model_load("model.dlc", &model, &error) != 0) {
 *     fprintf(stderr, "%s\n", dlc_error_message(error));
 *     dlc_error_free(error);
 *   }
 *   const void *inputs[] = {images};
 *   void *outputs[] = {scores};
 *   dlc_model_run(model, inputs, outputs, &error);
 *   dlc_model_free(model);
 *
 *===----------------------------------------------------------------------===*/
#ifndef DLC_DLC_C_H
#define DLC_DLC_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlc_model dlc_model;
typedef struct dlc_error dlc_error;
/* A run queued by dlc_model_run_async, finished by dlc_run_wait. */
typedef struct dlc_run dlc_run;

/* Element types, numbered as dlc::DType. */
typedef enum dlc_dtype {
  DLC_FLOAT32 = 0,
  DLC_FLOAT16 = 1,
  DLC_BFLOAT16 = 2,
  DLC_INT32 = 3,
  DLC_INT64 = 4,
  DLC_UINT8 = 5,
  DLC_BOOL = 6
} dlc_dtype;

/* Error codes. */
enum {
  DLC_OK = 0,
  DLC_ERROR = 1,           /* any dlc::Error: a bad file, a device missing, ... */
  DLC_INVALID_ARGUMENT = 2 /* a NULL pointer or an index out of range */
};

/* What an error says; valid until dlc_error_free. */
const char *dlc_error_message(const dlc_error *error);
int dlc_error_code(const dlc_error *error);
void dlc_error_free(dlc_error *error);

/* An input or output of a model; its pointers stay valid while the model is loaded. */
typedef struct dlc_tensor_info {
  const char *name;
  dlc_dtype dtype;
  int rank;
  const int64_t *shape;
  size_t bytes; /* of a contiguous buffer holding it */
} dlc_tensor_info;

/* Loads and checks a .dlc file (see docs/design/model-file.md). */
int dlc_model_load(const char *path, dlc_model **model, dlc_error **error);
void dlc_model_free(dlc_model *model);

int dlc_model_input_count(const dlc_model *model);
int dlc_model_output_count(const dlc_model *model);
int dlc_model_input(const dlc_model *model, int index, dlc_tensor_info *info, dlc_error **error);
int dlc_model_output(const dlc_model *model, int index, dlc_tensor_info *info,
                     dlc_error **error);

/* Runs the model: inputs[k] points at input k's bytes, outputs[k] at room for output
 * k's. Returns when the outputs are written. */
int dlc_model_run(const dlc_model *model, const void *const *inputs, void *const *outputs,
                  dlc_error **error);

/* Queues a run and returns at once: the inputs are copied before it returns; the
 * outputs are written, and the run freed, by dlc_run_wait. */
int dlc_model_run_async(const dlc_model *model, const void *const *inputs, dlc_run **run,
                        dlc_error **error);
int dlc_run_wait(dlc_run *run, void *const *outputs, dlc_error **error);

#ifdef __cplusplus
}
#endif

#endif /* DLC_DLC_C_H */
