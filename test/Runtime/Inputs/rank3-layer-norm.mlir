// LayerNorm forward on [B, S, N]: the statistics it writes are [B, S].
func.func @layer_norm_rank3(%x: memref<?x?x256xf16>, %w: memref<256xf16>, %b: memref<256xf16>,
                            %y: memref<?x?x256xf16>, %mean: memref<?x?xf32>, %rstd: memref<?x?xf32>) {
  norm.layer_norm x(%x : memref<?x?x256xf16>) weight(%w : memref<256xf16>) bias(%b : memref<256xf16>)
      outs y(%y : memref<?x?x256xf16>) mean(%mean : memref<?x?xf32>) rstd(%rstd : memref<?x?xf32>)
  return
}
