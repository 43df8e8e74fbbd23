/*===- run_model.c - a compiled model from C, through dlc_c.h -----------------===*
 *
 *   dlc-example-c-api model.dlc
 *
 * Loads a model file, lists its inputs and outputs, runs it on a fixed pattern
 * synchronously and asynchronously (the input buffer is overwritten while the run is
 * queued: the API copied it), checks that both runs agree and that errors come back
 * as codes and messages, and prints the first row's predicted class. Exits nonzero
 * when a check fails (the lit suite runs it on the model dlc-train writes).
 *
 *===----------------------------------------------------------------------===*/
#include "dlc/dlc_c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what, const dlc_error *error) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s%s%s\n", what, error ? ": " : "", error ? dlc_error_message(error) : "");
    ++failures;
  }
}

static void print_info(const char *kind, const dlc_tensor_info *info) {
  printf("%s '%s' dtype %d shape", kind, info->name, (int)info->dtype);
  for (int d = 0; d < info->rank; ++d)
    printf("%s%lld", d ? "x" : " ", (long long)info->shape[d]);
  printf(" (%zu bytes)\n", info->bytes);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.dlc\n", argv[0]);
    return 2;
  }
  dlc_error *error = NULL;
  dlc_model *model = NULL;

  check(dlc_model_load("/nonexistent/model.dlc", &model, &error) == DLC_ERROR,
        "loading a missing file fails", NULL);
  check(error && strstr(dlc_error_message(error), "/nonexistent/model.dlc") != NULL,
        "the error names the file", error);
  dlc_error_free(error);
  error = NULL;

  if (dlc_model_load(argv[1], &model, &error) != DLC_OK) {
    fprintf(stderr, "%s\n", dlc_error_message(error));
    dlc_error_free(error);
    return 1;
  }
  dlc_tensor_info in, out;
  check(dlc_model_input_count(model) == 1 && dlc_model_output_count(model) == 1,
        "one input and one output", NULL);
  check(dlc_model_input(model, 0, &in, &error) == DLC_OK, "input 0", error);
  check(dlc_model_output(model, 0, &out, &error) == DLC_OK, "output 0", error);
  print_info("input", &in);
  print_info("output", &out);
  check(dlc_model_input(model, 7, &in, &error) == DLC_INVALID_ARGUMENT, "no input 7", NULL);
  dlc_error_free(error);
  error = NULL;
  if (in.dtype != DLC_FLOAT32 || out.dtype != DLC_FLOAT32 || out.rank != 2) {
    fprintf(stderr, "this example takes float32 images and gives float32 scores\n");
    return 1;
  }

  size_t count = in.bytes / sizeof(float);
  float *x = malloc(in.bytes), *first = malloc(out.bytes), *second = malloc(out.bytes);
  for (size_t i = 0; i < count; ++i)
    x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  const void *inputs[1] = {x};
  void *firstOut[1] = {first}, *secondOut[1] = {second};

  check(dlc_model_run(model, inputs, firstOut, &error) == DLC_OK, "a run", error);
  dlc_run *run = NULL;
  check(dlc_model_run_async(model, inputs, &run, &error) == DLC_OK, "an asynchronous run", error);
  memset(x, 0, in.bytes); /* the queued run copied its input */
  check(run && dlc_run_wait(run, secondOut, &error) == DLC_OK, "waiting for it", error);
  check(memcmp(first, second, out.bytes) == 0, "both runs give the same scores", NULL);

  const void *none[1] = {NULL};
  check(dlc_model_run(model, none, firstOut, &error) == DLC_ERROR, "a NULL input fails", NULL);
  check(error && strstr(dlc_error_message(error), "NULL buffer") != NULL,
        "the error names the NULL buffer", error);
  dlc_error_free(error);

  int64_t classes = out.shape[1], best = 0;
  for (int64_t c = 1; c < classes; ++c)
    if (second[c] > second[best])
      best = c;
  printf("row 0: class %lld of %lld\n", (long long)best, (long long)classes);
  free(x);
  free(first);
  free(second);
  dlc_model_free(model);
  printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
