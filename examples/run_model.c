/*===- run_model.c - a compiled model from C, through dlc_c.h -----------------===*
 *
 *   dlc-example-c-api model.dlc
 *
 * Loads a model file, lists its inputs and outputs, runs it on a fixed pattern
 * synchronously and asynchronously (the input buffer is overwritten while the run is
 * queued: the API copied it), and from four threads at once on the one loaded model,
 * checks that every run agrees and that errors come back as codes and messages, and
 * prints the first row's predicted class. Exits nonzero
 * when a check fails (the lit suite runs it on the model dlc-train writes).
 *
 *===----------------------------------------------------------------------===*/
#include "dlc/dlc_c.h"

#include <pthread.h>
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

/* One thread's share of the concurrent runs: `runs` synchronous runs of one model on
 * one input, each compared with the expected scores. */
struct thread_runs {
  const dlc_model *model;
  const void *input;
  const float *expected;
  size_t bytes;
  int runs, mismatches, failed;
};

static void *run_repeatedly(void *argument) {
  struct thread_runs *t = argument;
  float *scores = malloc(t->bytes);
  const void *inputs[1] = {t->input};
  void *outputs[1] = {scores};
  for (int i = 0; i < t->runs; ++i) {
    dlc_error *error = NULL;
    if (dlc_model_run(t->model, inputs, outputs, &error) != DLC_OK) {
      ++t->failed;
      dlc_error_free(error);
    } else if (memcmp(scores, t->expected, t->bytes) != 0) {
      ++t->mismatches;
    }
  }
  free(scores);
  return NULL;
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

  /* Four threads run the one loaded model at once, five times each. */
  for (size_t i = 0; i < count; ++i)
    x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  struct thread_runs shares[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    shares[t] = (struct thread_runs){model, x, first, out.bytes, 5, 0, 0};
    check(pthread_create(&threads[t], NULL, run_repeatedly, &shares[t]) == 0,
          "starting a thread", NULL);
  }
  int mismatches = 0, failed = 0;
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    mismatches += shares[t].mismatches;
    failed += shares[t].failed;
  }
  check(failed == 0, "every concurrent run succeeds", NULL);
  check(mismatches == 0, "every concurrent run gives the same scores", NULL);
  printf("%d threads x %d runs at once: %d failed, %d differed\n", kThreads, 5, failed,
         mismatches);

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
