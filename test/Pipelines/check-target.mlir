// The GPU tail refuses what upstream would abort on (LLVM ERROR: a chip
// newer than the PTX version in `features`) or silently accept (a bad
// `format`), naming the option and what it accepts (issue 8 items 6, 9).
// RUN: not norm-opt %s --norm-gpu-to-binary=chip=sm_120 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-gpu-to-binary="chip=sm_90 features=+ptx70" 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not norm-opt %s --norm-gpu-to-binary="features=+ptxabc" 2>&1 | FileCheck %s --check-prefix=PTXNAN
// RUN: not norm-opt %s --norm-gpu-to-binary=format=garbage 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not norm-opt %s --norm-to-gpu-binary=chip=sm_100 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: norm-opt %s --norm-gpu-to-binary="chip=sm_80 features=+ptx70" | FileCheck %s --check-prefix=OK

// CHIP: error: norm-gpu-to-binary: unknown chip 'sm_120' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)
// CHIP-NOT: LLVM ERROR
// PTX: error: norm-gpu-to-binary: features '+ptx70' are too old for sm_90, which needs +ptx78 or later
// PTXNAN: error: norm-gpu-to-binary: features '+ptxabc': '+ptxabc' is not a PTX version (e.g. +ptx80)
// FORMAT: error: norm-gpu-to-binary: format 'garbage' is not one of isa, bin, fatbin
// FULL: error: norm-{{.*}}: unknown chip 'sm_100' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)
// OK: gpu.binary @k

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @copy(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %a[%t] : memref<4xf32>
      memref.store %v, %b[%t] : memref<4xf32>
      gpu.return
    }
  }
}
