// LayerNorm backward as a frontend emits it: bf16 activations, f32 weight
// and bias, dynamic token count M, hidden size 4096. Reads dy, x and the
// saved row statistics; returns dx, dweight and dbias.
func.func @layer_norm_grad_bf16_n4096(
    %dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>,
    %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x4096xbf16>)
      x(%x : tensor<?x4096xbf16>) mean(%mean : tensor<?xf32>)
      rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xf32>)
      -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xf32>)
         dbias(tensor<4096xf32>)
  return %dx, %dw, %db
      : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
}
