// RUN: norm-opt %s --split-input-file --norm-attach-resident-blocks | FileCheck %s

// A kernel whose record asks for 4 resident blocks gets nvvm.minctasm = 4
// (PTX: .minnctapersm 4); one whose record asks for none, and one without
// a record, get nothing.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @dx() kernel attributes {nvvm.minctasm = 4 : i32}
// CHECK: gpu.func @reduce() kernel {
// CHECK: gpu.func @unrecorded() kernel {
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @dx() kernel {
      gpu.return
    }
    gpu.func @reduce() kernel {
      gpu.return
    }
    gpu.func @unrecorded() kernel {
      gpu.return
    }
  }
  func.func @host(%g: index) attributes {norm.kernels = [
      #norm.kernel<name = "dx", kind = dx, block = 256, grid = programs,
                   lanes = 256, rows = 1, vector = 8, registers = true,
                   resident = 4>,
      #norm.kernel<name = "reduce", kind = reduce, block = 256,
                   grid = columns, columns = 32>]} {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@dx blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    gpu.launch_func @kernels::@reduce blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    gpu.launch_func @kernels::@unrecorded blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}

// -----

// Launched from two functions whose records differ: the larger.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @dx() kernel attributes {nvvm.minctasm = 3 : i32}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @dx() kernel {
      gpu.return
    }
  }
  func.func @a(%g: index) attributes {norm.kernels = [
      #norm.kernel<name = "dx", kind = dx, block = 256, grid = programs,
                   resident = 2>]} {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@dx blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
  func.func @b(%g: index) attributes {norm.kernels = [
      #norm.kernel<name = "dx", kind = dx, block = 256, grid = programs,
                   resident = 3>]} {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@dx blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}
