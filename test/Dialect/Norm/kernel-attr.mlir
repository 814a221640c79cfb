// RUN: norm-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics | norm-opt --split-input-file | FileCheck %s

// Round trips of #norm.kernel, the launch record of norm-map-to-gpu: every
// kind and grid rule by the names of norm/Support/ManifestSchema.h, the
// optional geometry, cluster and dynamic shared bytes, and keys in any
// order (printed in the order of ManifestSchema.def). Its parser, printer
// and verifier are stamped from that table: the keys, ranges and required
// fields below are the manifest's kernel fields.

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
// CHECK-SAME: #norm.kernel<name = "f_dx_2", kind = dx, block = 256, grid = programs, cluster = 8>,
// CHECK-SAME: #norm.kernel<name = "g_forward_0", kind = forward, block = 256, grid = row_blocks, lanes = 256, rows = 1, vector = 8, registers = true, cluster = 2>]
func.func @clustered() attributes {norm.kernels = [
    #norm.kernel<name = "f_dx_1", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = 8, registers = true, cluster = 4>,
    #norm.kernel<cluster = 8, name = "f_dx_2", kind = dx, block = 256, grid = programs>,
    #norm.kernel<name = "g_forward_0", kind = forward, block = 256, grid = row_blocks, lanes = 256, rows = 1, vector = 8, registers = true, cluster = 2>]} {
  return
}

// -----

// expected-error @+1 {{#norm.kernel: cluster must be in [1, 8], got 9}}
func.func @cluster_too_large() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, cluster = 9>}

// -----

// expected-error @+1 {{#norm.kernel: cluster must be in [1, 8], got -2}}
func.func @cluster_negative() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, cluster = -2>}

// -----

// expected-error @+1 {{#norm.kernel: cluster = 2 needs grid = programs, grid = row_blocks or a constant number of programs (clusters of blocks), got grid = columns}}
func.func @cluster_without_programs() attributes {k = #norm.kernel<name = "k", kind = reduce, block = 32, grid = columns, columns = 32, cluster = 2>}

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

// expected-error @+1 {{#norm.kernel: columns only goes with grid = columns (or a constant grid), got grid = programs}}
func.func @columns_without_rule() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, columns = 32>}

// -----

// expected-error @+1 {{duplicate 'block'}}
func.func @duplicate() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, block = 64, grid = programs>}

// -----

// Dynamic shared memory (the manifest's dynamic_shared_bytes) is `shared`.
// CHECK-LABEL: func @dynamic_shared
// CHECK-SAME: #norm.kernel<name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, shared = 81920>]
func.func @dynamic_shared() attributes {norm.kernels = [
    #norm.kernel<shared = 81920, name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true>]} {
  return
}

// -----

// The blocks an SM a dx kernel is compiled to keep resident (the
// manifest's resident_blocks) are `resident`.
// CHECK-LABEL: func @resident
// CHECK-SAME: #norm.kernel<name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, resident = 4>]
func.func @resident() attributes {norm.kernels = [
    #norm.kernel<resident = 4, name = "f_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true>]} {
  return
}

// -----

// expected-error @+1 {{#norm.kernel: resident must be in [1, 32], got 64}}
func.func @resident_too_many() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, resident = 64>}

// -----

// The ranges are the manifest's: a block of 2048 threads is refused here,
// as the runtime would refuse its manifest.
// expected-error @+1 {{#norm.kernel: block must be in [1, 1024], got 2048}}
func.func @block_too_large() attributes {k = #norm.kernel<name = "k", kind = dx, block = 2048, grid = programs>}

// -----

// expected-error @+1 {{#norm.kernel: vector must be in [1, 64], got -4}}
func.func @vector_negative() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, vector = -4>}

// -----

// expected-error @+1 {{#norm.kernel: shared must be in [1, 2147483647], got 4294967296}}
func.func @shared_too_large() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, shared = 4294967296>}

// -----

// expected-error @+1 {{#norm.kernel: empty name}}
func.func @empty_name() attributes {k = #norm.kernel<name = "", kind = dx, block = 32, grid = programs>}

// -----

// The manifest's key is not the attribute's.
// expected-error @+1 {{unknown key 'dynamic_shared_bytes'}}
func.func @manifest_key() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, dynamic_shared_bytes = 1024>}

// -----

// expected-error @+1 {{'registers' must be true or false}}
func.func @registers_word() attributes {k = #norm.kernel<name = "k", kind = dx, block = 32, grid = programs, registers = yes>}

// -----

// expected-error @+1 {{#norm.kernel needs name, kind, block and grid}}
func.func @missing_name() attributes {k = #norm.kernel<kind = dx, block = 32, grid = programs>}
