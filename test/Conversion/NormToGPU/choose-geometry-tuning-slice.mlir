// RUN: norm-opt %s --split-input-file --norm-choose-geometry="rows=1 tuning-file=%S/Inputs/tuning-slice.json" | FileCheck %s --check-prefix=TABLE
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="rows=256 tuning-file=%S/Inputs/tuning-slice.json" | FileCheck %s --check-prefix=NONE

// A cluster entry off the N it was timed at keeps the slice it timed (its
// threads, at most its chunks a lane and at least half of them) over as
// many blocks as this N needs.
// N = 65536's 512 threads x 2 blocks are slices of 32768 columns, 8 chunks
// a lane: at N = 81920 two such blocks would need 10 (80 elements a lane,
// past the register share, so the row would loop in one block), three
// take 7. N = 131072's cluster of 4 (512 threads, 8 chunks) at N = 100003:
// four blocks fill 87% of their chunk slots (7 a lane), under the measured
// layout's 100% less the 10% allowed, five fill 98% (5 a lane). RMSNorm
// N = 32768's 512 threads x 2 (4 chunks) at N = 28672: 2 to 6 blocks fill
// 58-88% of their slots, 7 take one chunk a lane, a quarter of the slice
// timed (2x slower than the cost model's on the H100, plan wide-holdout):
// the cost model's. Without an entry (M = 256) the cost model's forward,
// which never splits a row.
// TABLE-LABEL: func.func @n81920
// TABLE: norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 7, {{.*}}cluster = 3
// TABLE-LABEL: func.func @n100003
// TABLE: norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 5, {{.*}}cluster = 5
// TABLE-LABEL: func.func @rms28672
// TABLE-NOT: cluster =
// NONE-LABEL: func.func @n81920
// NONE-NOT: cluster =
// NONE-LABEL: func.func @n100003
// NONE-NOT: cluster =
func.func @n81920(%x: tensor<?x81920xbf16>, %w: tensor<81920xbf16>, %b: tensor<81920xbf16>) -> (tensor<?x81920xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x81920xbf16>) weight(%w : tensor<81920xbf16>) bias(%b : tensor<81920xbf16>) -> y(tensor<?x81920xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x81920xbf16>, tensor<?xf32>, tensor<?xf32>
}

// -----

func.func @n100003(%x: tensor<?x100003xbf16>, %w: tensor<100003xbf16>, %b: tensor<100003xbf16>) -> (tensor<?x100003xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x100003xbf16>) weight(%w : tensor<100003xbf16>) bias(%b : tensor<100003xbf16>) -> y(tensor<?x100003xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x100003xbf16>, tensor<?xf32>, tensor<?xf32>
}

// -----

func.func @rms28672(%x: tensor<?x28672xbf16>, %w: tensor<28672xbf16>) -> (tensor<?x28672xbf16>, tensor<?xf32>) {
  %y, %rstd = norm.rms_norm x(%x : tensor<?x28672xbf16>) weight(%w : tensor<28672xbf16>) -> y(tensor<?x28672xbf16>) rstd(tensor<?xf32>)
  return %y, %rstd : tensor<?x28672xbf16>, tensor<?xf32>
}
