//===- CAPI.cpp - the C API of libnormrt (norm-c/Runtime.h) ---------------===//
//
// Part of mlir-norm.
//
// Thin wrappers: each checks its pointers, calls the C++ implementation and
// turns a failed Status into its code and this thread's last error.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Runtime.h"

#include "Module.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

using namespace mlir::norm::runtime;

namespace {

thread_local std::string lastError;

int fail(const Status &s) {
  lastError = s.message;
  return s.code;
}

int fail(int code, std::string message) {
  lastError = std::move(message);
  return code;
}

int invalid(std::string message) {
  return fail(NORMRT_ERROR_INVALID_ARGUMENT, std::move(message));
}

/// Reads a whole file; on failure sets `error`.
bool readFile(const char *path, const char *what, std::string &contents,
              std::string &error) {
  std::FILE *file = std::fopen(path, "rb");
  if (!file) {
    error = std::string("cannot open the ") + what + " '" + path +
            "': " + std::strerror(errno);
    return false;
  }
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    contents.append(chunk, n);
  bool ok = !std::ferror(file);
  std::fclose(file);
  if (!ok)
    error = std::string("cannot read the ") + what + " '" + path + "'";
  return ok;
}

} // namespace

extern "C" {

int normrt_module_load(const void *image, size_t image_size,
                       const char *manifest_json, NormrtModule **module) {
  if (!module)
    return invalid("module (the result pointer) is NULL");
  *module = nullptr;
  if (!manifest_json)
    return invalid("manifest_json is NULL");
  std::unique_ptr<NormrtModule> m;
  if (Status s = loadModule(image, image_size, manifest_json, m); s.failed())
    return fail(s);
  *module = m.release();
  return NORMRT_OK;
}

int normrt_module_load_files(const char *image_path, const char *manifest_path,
                             NormrtModule **module) {
  if (!module)
    return invalid("module (the result pointer) is NULL");
  *module = nullptr;
  if (!image_path || !manifest_path)
    return invalid("image_path or manifest_path is NULL");
  std::string image, manifest, error;
  if (!readFile(manifest_path, "manifest", manifest, error))
    return fail(NORMRT_ERROR_MANIFEST, error);
  if (!readFile(image_path, "kernel image", image, error))
    return invalid(error);
  return normrt_module_load(image.data(), image.size(), manifest.c_str(),
                            module);
}

int normrt_module_load_manifest_only(const char *manifest_json,
                                     NormrtModule **module) {
  if (!module)
    return invalid("module (the result pointer) is NULL");
  *module = nullptr;
  if (!manifest_json)
    return invalid("manifest_json is NULL");
  std::unique_ptr<NormrtModule> m;
  if (Status s = loadManifestOnly(manifest_json, m); s.failed())
    return fail(s);
  *module = m.release();
  return NORMRT_OK;
}

void normrt_module_destroy(NormrtModule *module) { delete module; }

int normrt_workspace_bytes(const NormrtModule *module, int64_t rows,
                           size_t *bytes) {
  if (!module)
    return invalid("module is NULL");
  if (!bytes)
    return invalid("bytes (the result pointer) is NULL");
  WorkspaceLayout layout;
  if (Status s = planWorkspaces(module->manifest, rows, layout); s.failed())
    return fail(s);
  if (layout.total > SIZE_MAX)
    return fail(NORMRT_ERROR_WORKSPACE,
                "the workspace for M = " + std::to_string(rows) +
                    " exceeds size_t");
  *bytes = size_t(layout.total);
  return NORMRT_OK;
}

int normrt_launch(const NormrtModule *module, const NormrtTensor *tensors,
                  int32_t num_tensors, void *workspace, size_t workspace_size,
                  void *stream) {
  if (!module)
    return invalid("module is NULL");
  if (Status s = launchModule(*module, tensors, num_tensors, workspace,
                              workspace_size, stream);
      s.failed())
    return fail(s);
  return NORMRT_OK;
}

int normrt_validate(const NormrtModule *module, const NormrtTensor *tensors,
                    int32_t num_tensors, void *workspace,
                    size_t workspace_size) {
  if (!module)
    return invalid("module is NULL");
  thread_local LaunchPlan plan; // as launchModule's: no allocation a call
  if (Status s = planLaunch(module->manifest, tensors, num_tensors, workspace,
                            workspace_size, plan);
      s.failed())
    return fail(s);
  return NORMRT_OK;
}

int normrt_dry_run(const NormrtModule *module, const NormrtTensor *tensors,
                   int32_t num_tensors, void *workspace, size_t workspace_size,
                   char *buffer, size_t capacity, size_t *length) {
  if (!module)
    return invalid("module is NULL");
  if (!buffer && capacity)
    return invalid("buffer is NULL but capacity is " +
                   std::to_string(capacity));
  LaunchPlan plan;
  if (Status s = planLaunch(module->manifest, tensors, num_tensors, workspace,
                            workspace_size, plan);
      s.failed())
    return fail(s);
  std::string text = describePlan(module->manifest, plan);
  if (length)
    *length = text.size();
  if (capacity) {
    size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = 0;
  }
  return NORMRT_OK;
}

int64_t normrt_default_groups(int64_t rows, int64_t n) {
  return defaultGroups(rows, n);
}

int normrt_module_groups(const NormrtModule *module, int64_t rows,
                         int64_t *groups) {
  if (!module)
    return invalid("module is NULL");
  if (!groups)
    return invalid("groups (the result pointer) is NULL");
  if (rows < 0)
    return invalid("rows must be >= 0, got " + std::to_string(rows));
  *groups = groupsFor(module->manifest, rows);
  return NORMRT_OK;
}

int normrt_module_num_arguments(const NormrtModule *module, int32_t *count) {
  if (!module)
    return invalid("module is NULL");
  if (!count)
    return invalid("count (the result pointer) is NULL");
  *count = int32_t(module->manifest.arguments.size());
  return NORMRT_OK;
}

int normrt_module_argument(const NormrtModule *module, int32_t index,
                           NormrtArgumentInfo *info) {
  if (!module)
    return invalid("module is NULL");
  if (!info)
    return invalid("info (the result pointer) is NULL");
  const auto &arguments = module->manifest.arguments;
  if (index < 0 || size_t(index) >= arguments.size())
    return invalid("argument index " + std::to_string(index) +
                   " out of range (" + std::to_string(arguments.size()) +
                   " arguments)");
  const ArgumentSpec &a = arguments[index];
  *info = NormrtArgumentInfo();
  info->name = a.name.c_str();
  info->dtype = int32_t(a.dtype);
  info->rank = int32_t(a.shape.size());
  for (size_t i = 0; i < a.shape.size(); ++i)
    info->shape[i] = a.shape[i] == kRowsExtent ? -1 : a.shape[i];
  info->is_output = a.output;
  return NORMRT_OK;
}

const char *normrt_last_error(void) { return lastError.c_str(); }

} // extern "C"
