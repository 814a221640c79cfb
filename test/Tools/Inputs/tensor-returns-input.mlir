func.func @rms(%dy: tensor<?x64xf32>, %x: tensor<?x64xf32>, %rstd: tensor<?xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x64xf32>) x(%x : tensor<?x64xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x64xf32>)
  return %dx, %x : tensor<?x64xf32>, tensor<?x64xf32>
}
