// RMSNorm backward, bf16 activations and weight, dynamic M, N = 4096, with
// the reduction strategy spelled out (deterministic is the default).
func.func @rms_norm_grad_bf16_n4096(
    %dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>,
    %rstd: tensor<?xf32>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>)
      x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>)
      weight(%w : tensor<4096xbf16>)
      {strategy = #norm.strategy<deterministic>}
      -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw : tensor<?x4096xbf16>, tensor<4096xbf16>
}
