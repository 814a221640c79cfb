// RUN: norm-opt %s --split-input-file --norm-attach-cluster-dims --verify-diagnostics | FileCheck %s

// A kernel launched in clusters of 4 gets nvvm.cluster_dim (PTX:
// .reqnctapercluster 4, 1, 1); one launched without clusters gets nothing.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @clustered() kernel attributes {nvvm.cluster_dim = array<i32: 4, 1, 1>}
// CHECK: gpu.func @plain() kernel {
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @clustered() kernel {
      gpu.return
    }
    gpu.func @plain() kernel {
      gpu.return
    }
  }
  func.func @host(%g: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@clustered clusters in (%c4, %c1, %c1) blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    gpu.launch_func @kernels::@clustered clusters in (%c4, %c1, %c1) blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    gpu.launch_func @kernels::@plain blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func @host(%g: index, %c: index) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    // expected-error @+1 {{norm-attach-cluster-dims: the cluster size of a launch of 'k' is not a positive constant}}
    gpu.launch_func @kernels::@k clusters in (%c, %c1, %c1) blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func @host(%g: index) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@k clusters in (%c2, %c1, %c1) blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    // expected-error @+1 {{norm-attach-cluster-dims: 'k' is launched with two different cluster sizes; it can be compiled for one}}
    gpu.launch_func @kernels::@k blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}
