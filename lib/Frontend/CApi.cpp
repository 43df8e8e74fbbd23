//===- CApi.cpp - dlc_c.h over CompiledModel ------------------------------------===//
#include "dlc/dlc_c.h"

#include "dlc/Core/Error.h"
#include "dlc/Frontend/CompiledModel.h"

#include <cstring>
#include <string>

struct dlc_error {
  int code;
  std::string message;
};

struct dlc_model {
  std::shared_ptr<const dlc::CompiledModel> model;
};

struct dlc_run {
  std::shared_ptr<const dlc::CompiledModel> model;
  std::vector<dlc::Tensor> outputs;
};

namespace {

static_assert(int(dlc::DType::f32) == DLC_FLOAT32 && int(dlc::DType::f16) == DLC_FLOAT16 &&
                  int(dlc::DType::bf16) == DLC_BFLOAT16 && int(dlc::DType::i32) == DLC_INT32 &&
                  int(dlc::DType::i64) == DLC_INT64 && int(dlc::DType::u8) == DLC_UINT8 &&
                  int(dlc::DType::boolean) == DLC_BOOL,
              "dlc_dtype numbers dlc::DType's values");

int fail(dlc_error **error, int code, std::string message) {
  if (error)
    *error = new dlc_error{code, std::move(message)};
  return code;
}

/// Runs `body`, turning what it throws into an error.
template <typename Body> int guarded(dlc_error **error, Body &&body) {
  try {
    body();
    return DLC_OK;
  } catch (const dlc::Error &e) {
    return fail(error, DLC_ERROR, e.what());
  } catch (const std::exception &e) {
    return fail(error, DLC_ERROR, std::string("internal error: ") + e.what());
  }
}

void describe(const dlc::ModelTensor &t, dlc_tensor_info *info) {
  info->name = t.name.c_str();
  info->dtype = dlc_dtype(int(t.dtype));
  info->rank = int(t.shape.size());
  info->shape = t.shape.data();
  info->bytes = size_t(dlc::shape_rules::numElements(t.shape)) * dlc::dtype_size(t.dtype);
}

/// Entry `index` of `list` (a model's inputs or outputs) into `info`.
int tensorInfo(const char *call, const std::vector<dlc::ModelTensor> *list, int index,
               dlc_tensor_info *info, dlc_error **error) {
  if (!list || !info || index < 0 || size_t(index) >= list->size())
    return fail(error, DLC_INVALID_ARGUMENT,
                std::string(call) + ": no entry " + std::to_string(index) + " (the model has " +
                    std::to_string(list ? list->size() : 0) + ")");
  describe((*list)[size_t(index)], info);
  return DLC_OK;
}

/// The model's inputs from the caller's host buffers (copied now).
std::vector<dlc::Tensor> inputTensors(const dlc::CompiledModel &model, const void *const *inputs) {
  std::vector<dlc::Tensor> tensors;
  for (size_t k = 0; k < model.inputs().size(); ++k) {
    const dlc::ModelTensor &in = model.inputs()[k];
    if (!inputs[k])
      throw dlc::ValueError("input '" + in.name + "' is a NULL buffer");
    dlc::Tensor t = dlc::Tensor::empty(in.shape, in.dtype, dlc::cpu(0));
    std::memcpy(t.data(), inputs[k], t.nbytes());
    tensors.push_back(std::move(t));
  }
  return tensors;
}

void copyOut(const dlc::CompiledModel &model, std::vector<dlc::Tensor> &outputs,
             void *const *buffers) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!buffers[k])
      throw dlc::ValueError("output '" + model.outputs()[k].name + "' is a NULL buffer");
    dlc::Tensor host = outputs[k].to(dlc::cpu(0));
    host.wait_to_read();
    std::memcpy(buffers[k], host.data(), host.nbytes());
  }
}

} // namespace

extern "C" {

const char *dlc_error_message(const dlc_error *error) { return error ? error->message.c_str() : ""; }
int dlc_error_code(const dlc_error *error) { return error ? error->code : DLC_OK; }
void dlc_error_free(dlc_error *error) { delete error; }

int dlc_model_load(const char *path, dlc_model **model, dlc_error **error) {
  if (!path || !model)
    return fail(error, DLC_INVALID_ARGUMENT, "dlc_model_load: path and model must not be NULL");
  *model = nullptr;
  return guarded(error, [&] { *model = new dlc_model{dlc::CompiledModel::load(path)}; });
}

void dlc_model_free(dlc_model *model) { delete model; }

int dlc_model_input_count(const dlc_model *model) {
  return model ? int(model->model->inputs().size()) : 0;
}
int dlc_model_output_count(const dlc_model *model) {
  return model ? int(model->model->outputs().size()) : 0;
}

int dlc_model_input(const dlc_model *model, int index, dlc_tensor_info *info, dlc_error **error) {
  return tensorInfo("dlc_model_input", model ? &model->model->inputs() : nullptr, index, info,
                    error);
}

int dlc_model_output(const dlc_model *model, int index, dlc_tensor_info *info, dlc_error **error) {
  return tensorInfo("dlc_model_output", model ? &model->model->outputs() : nullptr, index, info,
                    error);
}

int dlc_model_run(const dlc_model *model, const void *const *inputs, void *const *outputs,
                  dlc_error **error) {
  if (!model || (!inputs && dlc_model_input_count(model) > 0) || !outputs)
    return fail(error, DLC_INVALID_ARGUMENT,
                "dlc_model_run: the model, inputs and outputs must not be NULL");
  return guarded(error, [&] {
    std::vector<dlc::Tensor> results = model->model->run(inputTensors(*model->model, inputs));
    copyOut(*model->model, results, outputs);
  });
}

int dlc_model_run_async(const dlc_model *model, const void *const *inputs, dlc_run **run,
                        dlc_error **error) {
  if (!model || (!inputs && dlc_model_input_count(model) > 0) || !run)
    return fail(error, DLC_INVALID_ARGUMENT,
                "dlc_model_run_async: the model, inputs and run must not be NULL");
  *run = nullptr;
  return guarded(error, [&] {
    auto queued = new dlc_run{model->model, {}};
    try {
      queued->outputs = model->model->run(inputTensors(*model->model, inputs));
    } catch (...) {
      delete queued;
      throw;
    }
    *run = queued;
  });
}

int dlc_run_wait(dlc_run *run, void *const *outputs, dlc_error **error) {
  if (!run || !outputs)
    return fail(error, DLC_INVALID_ARGUMENT, "dlc_run_wait: run and outputs must not be NULL");
  int status = guarded(error, [&] { copyOut(*run->model, run->outputs, outputs); });
  delete run;
  return status;
}

} // extern "C"
