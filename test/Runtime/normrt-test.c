/*===- normrt-test.c - the runtime's C API, used from C -------------------===*/
//
// Part of mlir-norm.
//
// Without arguments: checks of the C API itself (NULL handling, the
// thread-local last error, dry-run truncation), checked below.
//
// With a manifest (and optionally a kernel image): runs the commands of the
// lines of stdin that contain "CMD:" (with --prefix=P: "P-CMD:") against that
// manifest, echoing each as "> command" before its output, so a .test file
// holds its commands and their expected output side by side. Commands:
//
//   tensors M|BxS|...      well-formed contiguous tensors for every argument:
//                          row extent d, where the manifest has "?", is the
//                          d-th of the list (1 past its end); M = product
//   set NAME FIELD VALUE   FIELD: dtype (f32|f16|bf16|<code>), data, rank,
//                          sizeK, strideK (K = 0..7), name (NULL: none),
//                          shape AxBx... (rank, sizes, contiguous strides)
//   drop NAME / dup NAME   remove a tensor / append a copy of it
//                          (NAME: the first tensor so named, or #INDEX)
//   workspace SIZE|auto [PTR|NULL]
//                          what validate/launch pass (auto: workspace_bytes;
//                          initially auto at 0x7f0000000000)
//   validate / launch / dry-run
//   bytes M                normrt_workspace_bytes
//   groups M               normrt_module_groups
//   default-groups M N     normrt_default_groups
//   args                   the arguments the manifest declares
//   manifest JSON          reload from inline JSON (manifest only)
//   load-files             normrt_module_load_files(image, manifest)
//   load-files-keep        the same, and the loaded module replaces the
//                          manifest-only one (later launches use it)
//
// Failures print "error <CODE>: <message>".
//
//===----------------------------------------------------------------------===//

// RUN: normrt-test | FileCheck %s

#include "norm-c/Runtime.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 32

static const char *codeName(int code) {
  switch (code) {
  case NORMRT_OK:
    return "OK";
  case NORMRT_ERROR_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case NORMRT_ERROR_MANIFEST:
    return "MANIFEST";
  case NORMRT_ERROR_DRIVER:
    return "DRIVER";
  case NORMRT_ERROR_WORKSPACE:
    return "WORKSPACE";
  }
  return "UNKNOWN";
}

/// Prints "ok" or "error <CODE>: <message>"; returns `code`.
static int report(int code) {
  if (code == NORMRT_OK)
    printf("ok\n");
  else
    printf("error %s: %s\n", codeName(code), normrt_last_error());
  return code;
}

static const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case NORMRT_F32:
    return "f32";
  case NORMRT_F16:
    return "f16";
  case NORMRT_BF16:
    return "bf16";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Built-in checks
//===----------------------------------------------------------------------===//

static const char *kSmallManifest =
    "{\"format_version\": 2, \"function\": \"f\","
    " \"arguments\": ["
    "  {\"name\": \"x\", \"kind\": \"x\", \"role\": \"input\","
    "   \"dtype\": \"f32\", \"shape\": [\"?\", 8]},"
    "  {\"name\": \"y\", \"kind\": \"y\", \"role\": \"output\","
    "   \"dtype\": \"f32\", \"shape\": [\"?\", 8]}],"
    " \"workspaces\": [],"
    " \"kernels\": [{\"name\": \"k\", \"kind\": \"forward\", \"block\": 32,"
    "   \"grid\": \"row_blocks\","
    "   \"rows\": 4, \"params\": [{\"argument\": 0, \"rank\": 2},"
    "                            {\"argument\": 1, \"rank\": 2}]}]}";

static void *failOnAnotherThread(void *unused) {
  (void)unused;
  size_t bytes;
  normrt_workspace_bytes(NULL, 1, &bytes);
  printf("thread: %s\n", normrt_last_error());
  return NULL;
}

// The CHECK lines are longer than 80 columns.
// clang-format off
static int builtinChecks(void) {
  NormrtModule *m = (NormrtModule *)1;
  // CHECK: initial error: ''
  printf("initial error: '%s'\n", normrt_last_error());
  // CHECK: load NULL manifest: error INVALID_ARGUMENT: manifest_json is NULL
  printf("load NULL manifest: ");
  report(normrt_module_load_manifest_only(NULL, &m));
  // CHECK: module reset to NULL: 1
  printf("module reset to NULL: %d\n", m == NULL);
  // CHECK: load into NULL: error INVALID_ARGUMENT: module (the result pointer) is NULL
  printf("load into NULL: ");
  report(normrt_module_load_manifest_only(kSmallManifest, NULL));
  // CHECK: load NULL image: error INVALID_ARGUMENT: the kernel image is NULL or empty
  printf("load NULL image: ");
  report(normrt_module_load(NULL, 0, kSmallManifest, &m));
  // CHECK: bytes of NULL: error INVALID_ARGUMENT: module is NULL
  printf("bytes of NULL: ");
  report(normrt_workspace_bytes(NULL, 1, NULL));
  // CHECK: launch NULL: error INVALID_ARGUMENT: module is NULL
  printf("launch NULL: ");
  report(normrt_launch(NULL, NULL, 0, NULL, 0, NULL));
  normrt_module_destroy(NULL);

  // The last error is per thread.
  // CHECK: thread: module is NULL
  pthread_t thread;
  normrt_module_load_manifest_only(NULL, &m);
  pthread_create(&thread, NULL, failOnAnotherThread, NULL);
  pthread_join(thread, NULL);
  // CHECK: main thread still: manifest_json is NULL
  printf("main thread still: %s\n", normrt_last_error());

  // CHECK: load small: ok
  printf("load small: ");
  if (report(normrt_module_load_manifest_only(kSmallManifest, &m)))
    return 1;
  // A success leaves the last error alone.
  // CHECK: after success: manifest_json is NULL
  printf("after success: %s\n", normrt_last_error());

  // CHECK: bytes NULL result: error INVALID_ARGUMENT: bytes (the result pointer) is NULL
  printf("bytes NULL result: ");
  report(normrt_workspace_bytes(m, 1, NULL));
  // CHECK: argument 2: error INVALID_ARGUMENT: argument index 2 out of range (2 arguments)
  NormrtArgumentInfo info;
  printf("argument 2: ");
  report(normrt_module_argument(m, 2, &info));
  // CHECK: argument 1: y f32 rank 2 [-1, 8] output 1
  normrt_module_argument(m, 1, &info);
  printf("argument 1: %s %s rank %d [%" PRId64 ", %" PRId64 "] output %d\n",
         info.name, dtypeName(info.dtype), info.rank, info.shape[0],
         info.shape[1], info.is_output);

  NormrtTensor t[2];
  for (int i = 0; i < 2; ++i) {
    t[i].name = i ? "y" : "x";
    t[i].data = (void *)(uintptr_t)(0x10000 * (i + 1));
    t[i].dtype = NORMRT_F32;
    t[i].rank = 2;
    t[i].sizes[0] = 9;
    t[i].sizes[1] = 8;
    t[i].strides[0] = 8;
    t[i].strides[1] = 1;
  }
  // CHECK: tensors NULL: error INVALID_ARGUMENT: tensors is NULL but num_tensors is 2
  printf("tensors NULL: ");
  report(normrt_validate(m, NULL, 2, NULL, 0));
  // The manifest-only module plans but cannot launch.
  // CHECK: launch manifest-only: error INVALID_ARGUMENT: the module was loaded without kernels (normrt_module_load_manifest_only); it cannot launch
  printf("launch manifest-only: ");
  report(normrt_launch(m, t, 2, NULL, 0, NULL));
  // ... except with M = 0, which launches nothing.
  t[0].sizes[0] = t[1].sizes[0] = 0;
  t[0].data = t[1].data = NULL;
  // CHECK: launch M = 0: ok
  printf("launch M = 0: ");
  report(normrt_launch(m, t, 2, NULL, 0, NULL));
  t[0].sizes[0] = t[1].sizes[0] = 9;
  t[0].data = (void *)0x10000;
  t[1].data = (void *)0x20000;

  // Dry run: the full text, then a truncated copy with the full length.
  char text[512];
  size_t length = 0;
  // CHECK: dry run: ok
  printf("dry run: ");
  report(normrt_dry_run(m, t, 2, NULL, 0, text, sizeof(text), &length));
  // CHECK-NEXT: m 9 groups 9 workspace 0
  // CHECK-NEXT: launch k grid 3 block 32 params 14: [0x10000 0x10000 0 9 8 8 1] [0x20000 0x20000 0 9 8 8 1]
  printf("%s", text);
  // CHECK: length 117 = 117
  printf("length %zu = %zu\n", length, strlen(text));
  char small[8];
  normrt_dry_run(m, t, 2, NULL, 0, small, sizeof(small), &length);
  // CHECK: truncated 'm 9 gro' length 117
  printf("truncated '%s' length %zu\n", small, length);
  // CHECK: NULL buffer: error INVALID_ARGUMENT: buffer is NULL but capacity is 8
  printf("NULL buffer: ");
  report(normrt_dry_run(m, t, 2, NULL, 0, NULL, 8, &length));

  // CHECK: default groups: 1 16 17 512 512 128
  printf("default groups: %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
         " %" PRId64 " %" PRId64 "\n",
         normrt_default_groups(0, 4096), normrt_default_groups(16, 4096),
         normrt_default_groups(17, 4096), normrt_default_groups(1 << 20, 4096),
         normrt_default_groups(1 << 20, 24),
         normrt_default_groups(1 << 20, 1 << 20));
  normrt_module_destroy(m);
  // CHECK: done
  printf("done\n");
  return 0;
}
// clang-format on

//===----------------------------------------------------------------------===//
// Script mode
//===----------------------------------------------------------------------===//

static NormrtModule *module;
static NormrtTensor tensors[MAX_TENSORS];
static char names[MAX_TENSORS][64];
static int numTensors;
static int64_t rows;
static int autoWorkspace = 1;
static size_t workspaceSize;
static void *workspacePtr = (void *)(uintptr_t)0x7f0000000000ull;

/// The tensor called `name`, or number N for "#N".
static int findTensor(const char *name) {
  if (name && name[0] == '#') {
    int i = atoi(name + 1);
    if (i >= 0 && i < numTensors)
      return i;
  }
  for (int i = 0; name && i < numTensors; ++i)
    if (tensors[i].name && !strcmp(tensors[i].name, name))
      return i;
  printf("no tensor '%s'\n", name);
  return -1;
}

/// Reads "A" or "AxBx..." into `out` (at most NORMRT_MAX_RANK + 1 values);
/// returns how many. Decimal: "0x40" is the extents 0 and 40.
static int parseExtents(const char *text, int64_t *out) {
  int count = 0;
  while (text && *text && count <= NORMRT_MAX_RANK) {
    char *end;
    out[count++] = strtoll(text, &end, 10);
    text = *end == 'x' ? end + 1 : NULL;
  }
  return count;
}

/// Row-major strides for the sizes of `t` (wrapping, as the sizes of the
/// overflow checks would not fit).
static void contiguousStrides(NormrtTensor *t) {
  uint64_t stride = 1;
  for (int d = t->rank - 1; d >= 0; --d) {
    t->strides[d] = (int64_t)stride;
    stride *= (uint64_t)t->sizes[d];
  }
}

/// Fresh tensors: argument i at 0x10000000 * (i + 1), contiguous; the
/// "?" at row extent d of the manifest takes rowExtents[d] (1 past them).
static void makeTensors(const int64_t *rowExtents, int numRowExtents) {
  int32_t count = 0;
  normrt_module_num_arguments(module, &count);
  uint64_t product = 1;
  for (int d = 0; d < numRowExtents; ++d)
    product *= (uint64_t)rowExtents[d];
  rows = (int64_t)product;
  numTensors = count;
  for (int32_t i = 0; i < count && i < MAX_TENSORS; ++i) {
    NormrtArgumentInfo info;
    normrt_module_argument(module, i, &info);
    snprintf(names[i], sizeof(names[i]), "%s", info.name);
    NormrtTensor *t = &tensors[i];
    memset(t, 0, sizeof(*t));
    t->name = names[i];
    t->data = (void *)(uintptr_t)(0x10000000ull * (uint64_t)(i + 1));
    t->dtype = info.dtype;
    t->rank = info.rank;
    for (int d = 0; d < info.rank; ++d)
      t->sizes[d] = info.shape[d] >= 0  ? info.shape[d]
                    : d < numRowExtents ? rowExtents[d]
                                        : 1;
    contiguousStrides(t);
  }
}

static void prepareWorkspace(void) {
  if (autoWorkspace && normrt_workspace_bytes(module, rows, &workspaceSize))
    workspaceSize = 0;
}

static int runCommand(char *line, const char *manifestPath,
                      const char *imagePath) {
  char *cmd = strtok(line, " \t\r\n");
  if (!cmd)
    return 0;
  if (!strcmp(cmd, "tensors")) {
    int64_t extents[NORMRT_MAX_RANK + 1];
    makeTensors(extents, parseExtents(strtok(NULL, " \t\r\n"), extents));
    return 0;
  }
  if (!strcmp(cmd, "set")) {
    char *name = strtok(NULL, " \t\r\n");
    char *field = strtok(NULL, " \t\r\n");
    char *value = strtok(NULL, " \t\r\n");
    int i = findTensor(name);
    if (i < 0 || !field || !value)
      return 1;
    NormrtTensor *t = &tensors[i];
    if (!strcmp(field, "dtype")) {
      t->dtype = !strcmp(value, "f32")    ? NORMRT_F32
                 : !strcmp(value, "f16")  ? NORMRT_F16
                 : !strcmp(value, "bf16") ? NORMRT_BF16
                                          : (int32_t)strtol(value, NULL, 0);
    } else if (!strcmp(field, "data")) {
      t->data = (void *)(uintptr_t)strtoull(value, NULL, 0);
    } else if (!strcmp(field, "rank")) {
      t->rank = (int32_t)strtol(value, NULL, 0);
    } else if (!strncmp(field, "size", 4) && field[4] >= '0' &&
               field[4] < '0' + NORMRT_MAX_RANK && !field[5]) {
      t->sizes[field[4] - '0'] = strtoll(value, NULL, 0);
    } else if (!strncmp(field, "stride", 6) && field[6] >= '0' &&
               field[6] < '0' + NORMRT_MAX_RANK && !field[7]) {
      t->strides[field[6] - '0'] = strtoll(value, NULL, 0);
    } else if (!strcmp(field, "shape")) {
      // Past NORMRT_MAX_RANK only the rank is kept: the runtime must refuse
      // it before it reads a size.
      int64_t extents[NORMRT_MAX_RANK + 1];
      int count = parseExtents(value, extents);
      t->rank = count;
      for (int d = 0; d < count && d < NORMRT_MAX_RANK; ++d)
        t->sizes[d] = extents[d];
      if (count <= NORMRT_MAX_RANK)
        contiguousStrides(t);
    } else if (!strcmp(field, "name")) {
      if (!strcmp(value, "NULL")) {
        t->name = NULL;
      } else {
        snprintf(names[i], sizeof(names[i]), "%s", value);
        t->name = names[i];
      }
    } else {
      printf("unknown field '%s'\n", field);
      return 1;
    }
    return 0;
  }
  if (!strcmp(cmd, "drop") || !strcmp(cmd, "dup")) {
    int i = findTensor(strtok(NULL, " \t\r\n"));
    if (i < 0)
      return 1;
    if (!strcmp(cmd, "dup")) {
      tensors[numTensors] = tensors[i];
      memcpy(names[numTensors], names[i], sizeof(names[i]));
      tensors[numTensors].name = names[numTensors];
      ++numTensors;
      return 0;
    }
    for (int j = i; j + 1 < numTensors; ++j) {
      tensors[j] = tensors[j + 1];
      memcpy(names[j], names[j + 1], sizeof(names[j]));
      if (tensors[j].name)
        tensors[j].name = names[j];
    }
    --numTensors;
    return 0;
  }
  if (!strcmp(cmd, "workspace")) {
    char *size = strtok(NULL, " \t\r\n");
    char *ptr = strtok(NULL, " \t\r\n");
    autoWorkspace = !strcmp(size, "auto");
    if (!autoWorkspace)
      workspaceSize = (size_t)strtoull(size, NULL, 0);
    if (ptr)
      workspacePtr = !strcmp(ptr, "NULL")
                         ? NULL
                         : (void *)(uintptr_t)strtoull(ptr, NULL, 0);
    return 0;
  }
  if (!strcmp(cmd, "validate")) {
    prepareWorkspace();
    report(normrt_validate(module, tensors, numTensors, workspacePtr,
                           workspaceSize));
    return 0;
  }
  if (!strcmp(cmd, "launch")) {
    prepareWorkspace();
    report(normrt_launch(module, tensors, numTensors, workspacePtr,
                         workspaceSize, NULL));
    return 0;
  }
  if (!strcmp(cmd, "dry-run")) {
    prepareWorkspace();
    static char text[1 << 16];
    if (!report(normrt_dry_run(module, tensors, numTensors, workspacePtr,
                               workspaceSize, text, sizeof(text), NULL)))
      printf("%s", text);
    return 0;
  }
  if (!strcmp(cmd, "bytes")) {
    int64_t m = strtoll(strtok(NULL, " \t\r\n"), NULL, 0);
    size_t bytes = 0;
    if (!normrt_workspace_bytes(module, m, &bytes))
      printf("bytes %" PRId64 ": %zu\n", m, bytes);
    else
      report(1);
    return 0;
  }
  if (!strcmp(cmd, "groups")) {
    int64_t m = strtoll(strtok(NULL, " \t\r\n"), NULL, 0), g = 0;
    if (!normrt_module_groups(module, m, &g))
      printf("groups %" PRId64 ": %" PRId64 "\n", m, g);
    else
      report(1);
    return 0;
  }
  if (!strcmp(cmd, "default-groups")) {
    int64_t m = strtoll(strtok(NULL, " \t\r\n"), NULL, 0);
    int64_t n = strtoll(strtok(NULL, " \t\r\n"), NULL, 0);
    printf("default-groups %" PRId64 " %" PRId64 ": %" PRId64 "\n", m, n,
           normrt_default_groups(m, n));
    return 0;
  }
  if (!strcmp(cmd, "args")) {
    int32_t count = 0;
    normrt_module_num_arguments(module, &count);
    for (int32_t i = 0; i < count; ++i) {
      NormrtArgumentInfo info;
      normrt_module_argument(module, i, &info);
      printf("arg %d %s %s %s [", i, info.name, info.is_output ? "out" : "in",
             dtypeName(info.dtype));
      for (int d = 0; d < info.rank; ++d)
        printf(d ? ", %" PRId64 : "%" PRId64, info.shape[d]);
      printf("]\n");
    }
    return 0;
  }
  if (!strcmp(cmd, "manifest")) {
    char *json = strtok(NULL, "\r\n");
    NormrtModule *m = NULL;
    if (!report(normrt_module_load_manifest_only(json ? json : "", &m))) {
      normrt_module_destroy(module);
      module = m;
    }
    return 0;
  }
  if (!strcmp(cmd, "load-files") || !strcmp(cmd, "load-files-keep")) {
    /* load-files-keep: the loaded module (kernels, driver) replaces the
       manifest-only one, so later commands launch through the driver. */
    NormrtModule *m = NULL;
    if (!report(normrt_module_load_files(imagePath ? imagePath : "",
                                         manifestPath, &m))) {
      if (!strcmp(cmd, "load-files")) {
        normrt_module_destroy(m);
      } else {
        normrt_module_destroy(module);
        module = m;
      }
    }
    return 0;
  }
  printf("unknown command '%s'\n", cmd);
  return 1;
}

static int script(const char *manifestPath, const char *imagePath,
                  const char *marker) {
  FILE *f = fopen(manifestPath, "rb");
  if (!f) {
    printf("cannot open %s\n", manifestPath);
    return 1;
  }
  static char json[1 << 20];
  size_t n = fread(json, 1, sizeof(json) - 1, f);
  fclose(f);
  json[n] = 0;
  printf("load: ");
  if (report(normrt_module_load_manifest_only(json, &module)))
    return 1;
  char line[4096];
  int status = 0;
  while (fgets(line, sizeof(line), stdin)) {
    char *cmd = strstr(line, marker);
    if (!cmd || (cmd != line && cmd[-1] != ' ' && cmd[-1] != '#'))
      continue;
    cmd += strlen(marker);
    while (*cmd == ' ')
      ++cmd;
    printf("> %s", cmd);
    if (!strchr(cmd, '\n'))
      printf("\n");
    status |= runCommand(cmd, manifestPath, imagePath);
  }
  normrt_module_destroy(module);
  return status;
}

int main(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL};
  char marker[64] = "CMD:";
  int numPaths = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--prefix=", 9))
      snprintf(marker, sizeof(marker), "%s-CMD:", argv[i] + 9);
    else if (numPaths < 2)
      paths[numPaths++] = argv[i];
  }
  if (!numPaths)
    return builtinChecks();
  return script(paths[0], paths[1], marker);
}
