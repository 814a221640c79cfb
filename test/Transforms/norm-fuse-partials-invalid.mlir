// RUN: norm-opt %s --split-input-file --norm-fuse-partials --verify-diagnostics

// The partial and dx nests must walk the same programs.
func.func @different_programs(%ws: memref<?x?xf32>, %a: index, %b: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  // expected-error @+1 {{norm-fuse-partials: cannot fuse: the partial and dx nests do not walk the same programs}}
  scf.for %p = %c0 to %a step %c1 {
    scf.for %r = %c0 to %n step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        memref.store %v, %ws[%p, %j] : memref<?x?xf32>
      }
    }
  } {norm.stage = #norm.stage<partials>, norm.id = 0 : i64, norm.accumulate = f32}
  scf.for %p = %c0 to %b step %c1 {
    scf.for %r = %c0 to %n step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        memref.store %v, %ws[%r, %j] : memref<?x?xf32>
      }
    }
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A partials nest must have a dx nest of its op to join.
func.func @no_dx_nest(%ws: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  // expected-error @+1 {{norm-fuse-partials: cannot fuse: op 0 has no dx nest}}
  scf.for %p = %c0 to %n step %c1 {
    memref.store %v, %ws[%p, %c0] : memref<?x?xf32>
  } {norm.stage = #norm.stage<partials>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A dx nest inside a partials nest (issue 8 item 3: fusing the outer nest
// erased the inner one while the pass still held it).
func.func @nested_nests(%ws: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  // expected-note @+1 {{the enclosing 'partials' nest}}
  scf.for %p = %c0 to %n step %c1 {
    scf.for %r = %c0 to %n step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        memref.store %v, %ws[%p, %j] : memref<?x?xf32>
      }
    }
    // expected-error @+1 {{norm-fuse-partials: a 'dx' nest inside another tagged nest; nests are never nested}}
    scf.for %q = %c0 to %n step %c1 {
      scf.for %r = %c0 to %n step %c1 {
        scf.for %j = %c0 to %n step %c1 {
          memref.store %v, %ws[%r, %j] : memref<?x?xf32>
        }
      }
    } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  } {norm.stage = #norm.stage<partials>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}
