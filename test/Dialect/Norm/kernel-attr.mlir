// RUN: norm-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics | norm-opt --split-input-file | FileCheck %s

// Round trips of #norm.kernel, the launch record of norm-map-to-gpu: every
// kind and grid rule by the names of norm/Support/ManifestSchema.h, the
// optional geometry and cluster, and keys in any order (printed in one).

// CHECK-LABEL: func @records
// CHECK-SAME: norm.kernels = [
// CHECK-SAME: #norm.kernel<name = "f_zero_0", kind = zero, block = 256, grid = workspace_rows>,
// CHECK-SAME: #norm.kernel<name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true>,
// CHECK-SAME: #norm.kernel<name = "f_reduce_2", kind = reduce, block = 256, grid = columns, columns = 32>,
// CHECK-SAME: #norm.kernel<name = "g_forward_0", kind = forward, block = 128, grid = row_blocks, lanes = 32, rows = 4, vector = 4, registers = false>,
// CHECK-SAME: #norm.kernel<name = "h", kind = zero, block = 32, grid = constant>]
func.func @records() attributes {norm.kernels = [
    #norm.kernel<name = "f_zero_0", kind = zero, block = 256, grid = workspace_rows>,
    #norm.kernel<name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true>,
    #norm.kernel<grid = columns, columns = 32, name = "f_reduce_2", block = 256, kind = reduce>,
    #norm.kernel<name = "g_forward_0", kind = forward, block = 128, grid = row_blocks, lanes = 32, rows = 4, vector = 4, registers = false>,
    #norm.kernel<name = "h", kind = zero, block = 32, grid = constant>]} {
  return
}

// -----

// A row kernel in thread-block clusters: `cluster` printed last, as the
// other optional keys wherever it was written.
// CHECK-LABEL: func @clustered
// CHECK-SAME: #norm.kernel<name = "f_dx_1", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = 8, registers = true, cluster = 4>,
// CHECK-SAME: #norm.kernel<name = "f_dx_2", kind = dx, block = 256, grid = programs, cluster = 8>]
func.func @clustered() attributes {norm.kernels = [
    #norm.kernel<name = "f_dx_1", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = 8, registers = true, cluster = 4>,
    #norm.kernel<cluster = 8, name = "f_dx_2", kind = dx, block = 256, grid = programs>]} {
  return
}

// -----

// expected-error @+1 {{#norm.kernel: cluster must be in [1, 8], got 9}}
func.func @cluster_too_large() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, cluster = 9>}

// -----

// expected-error @+1 {{#norm.kernel: cluster must be in [1, 8], got -2}}
func.func @cluster_negative() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, cluster = -2>}

// -----

// expected-error @+1 {{#norm.kernel: cluster > 1 only goes with grid = programs (G clusters of blocks), got grid = row_blocks}}
func.func @cluster_without_programs() attributes {k = #norm.kernel<name = "k", kind = forward, block = 32, grid = row_blocks, rows = 4, cluster = 2>}

// -----

// expected-error @+1 {{unknown kernel kind 'backward'}}
func.func @bad_kind() attributes {k = #norm.kernel<name = "k", kind = backward, block = 32, grid = programs>}

// -----

// expected-error @+1 {{unknown grid rule 'columns32'}}
func.func @bad_grid() attributes {k = #norm.kernel<name = "k", kind = reduce, block = 32, grid = columns32>}

// -----

// expected-error @+1 {{#norm.kernel needs name, kind, block and grid}}
func.func @missing_grid() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32>}

// -----

// expected-error @+1 {{columns only go with grid = columns}}
func.func @columns_without_rule() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, columns = 32>}

// -----

// expected-error @+1 {{duplicate 'block'}}
func.func @duplicate() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, block = 64, grid = programs>}
