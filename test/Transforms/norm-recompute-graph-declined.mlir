// RUN: norm-opt %s --norm-recompute-graph | FileCheck %s

// Not an error: the forward's x (bf16) has another type than the stored
// f32 xhat, which the grad could not read as x. The post-condition allows
// it, and the grad keeps reading xhat.
// CHECK-LABEL: func @xhat_of_another_type
// CHECK: norm.rms_norm_grad {{.*}}xhat(
func.func @xhat_of_another_type(%x: tensor<?x64xbf16>, %dy: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<?x64xbf16>) {eps = 1.0e-5 : f32}
      -> y(tensor<?x64xbf16>) rstd(tensor<?xf32>) xhat(tensor<?x64xf32>)
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x64xf32>) xhat(%xhat : tensor<?x64xf32>) rstd(%rstd : tensor<?xf32>)
      -> dx(tensor<?x64xf32>)
  return %dx : tensor<?x64xf32>
}
