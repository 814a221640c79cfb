// RUN: norm-opt %s --dump-pass-pipeline -o /dev/null \
// RUN:   --norm-to-gpu-binary="strategy=locked groups=32 bufferize-function-boundaries=0 threads=128 max-register-elements=32 batch-rows=3 max-lanes=16 prefetch=2 partial-vector=2 pipeline=1 narrow-cache=1 hold-columns=1 trim-idle-warps=0 two-chunk-rows=0 register-partials=1 row-barriers=1 async-rows=1 ring-dynamic=1 reduce-columns=16 reduce-unroll=6 reread-fallback=0 forward-finish=0 wave-resident=1 dependent-launch=0 chip=sm_80 opt-level=2 tuning-file=t.json" 2>&1 | FileCheck %s
// RUN: norm-opt %s --dump-pass-pipeline -o /dev/null --norm-lower-to-loops 2>&1 | FileCheck %s --check-prefix=LOOPS
// RUN: not norm-opt %s --norm-to-gpu-binary="strategy=fastest" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: norm-opt %s --dump-pass-pipeline -o /dev/null --norm-to-gpu-binary="reciprocal-divide=1" 2>&1 | FileCheck %s --check-prefix=RECIP

// Every stage option reaches its pass from the full pipeline, each under
// one name (chip feeds both the GPU mapping and the NVVM target), and the
// stage checks run at each boundary.
// CHECK: one-shot-bufferize{{.*}}bufferize-function-boundaries=false
// CHECK: norm-check-stage{stage=bufferized}
// CHECK: norm-split{groups=32 strategy=locked}
// CHECK-NEXT: norm-lower-forward
// CHECK-NEXT: norm-check-stage{stage=split}
// CHECK: norm-recompute-loops
// CHECK: norm-check-stage{stage=recomputed}
// CHECK: norm-promote
// CHECK: norm-check-stage{stage=promoted}
// CHECK: norm-fuse-partials
// CHECK: norm-cache-rows{early-rows=true}
// CHECK: norm-check-stage{stage=fused}
// CHECK: norm-choose-geometry{batch-rows=3 chip=sm_80 cluster=0 hold-columns=1 max-lanes=16 max-register-elements=32 narrow-cache=1 partial-vector=2 pipeline=1 prefetch=2 register-partials=true rows=0 threads=128 trim-idle-warps=false tuning=true tuning-file=t.json two-chunk-rows=false}
// CHECK: norm-map-to-gpu{async-rows=1 chip=sm_80 dependent-launch=false fit-early-rows=true forward-finish=0 reduce-columns=16 reduce-unroll=6 reread-fallback=false ring-dynamic=true row-barriers=1 rows=0 wave-resident=true}
// CHECK: norm-check-target{chip=sm_80
// CHECK: norm-attach-cluster-dims
// CHECK-NEXT: norm-attach-resident-blocks
// CHECK: nvvm-attach-target{O=2 chip=sm_80
// The kernels' bf16 lanes are always widened by shifts; division by N
// stays a division unless reciprocal-divide asks for the multiply.
// CHECK: norm-unpack-bf16
// CHECK-NOT: norm-reciprocal-divide
// RECIP: norm-unpack-bf16
// RECIP: norm-reciprocal-divide

// LOOPS: norm-recompute-graph
// LOOPS: norm-split{groups=0 strategy=keep}
// LOOPS-NEXT: norm-lower-forward
// LOOPS-NEXT: norm-check-stage{stage=split}
// LOOPS: norm-check-stage{stage=fused}
// LOOPS-NOT: norm-map-to-gpu

// BAD: for the --strategy option: Cannot find option named 'fastest'!
