// A tag says what a nest is for, not that its shape is right: the mapping
// checks each nest against the form the lowering creates and names what is
// wrong, instead of crashing or emitting a wrong kernel (issue 8: these
// inputs crashed norm-map-to-gpu with use-after-frees).
// RUN: norm-opt %s --split-input-file --norm-choose-geometry --norm-map-to-gpu --verify-diagnostics

// A `dx` nest that is a single row loop (the first chunk of
// test/Transforms/norm-promote.mlir).
func.func @dx_without_programs(%x: memref<?x?xf32>, %r: memref<?xf32>, %out: memref<?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{this 'dx' nest is not of the form the lowering creates (for p { for r { column loops } }): the program loop holds 'memref.load' besides its one row loop}}
  scf.for %i = %c0 to %m step %c1 {
    %rs = memref.load %r[%i] : memref<?xf32>
    %zero = arith.constant 0.0 : f32
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    %p = arith.mulf %s, %rs : f32
    memref.store %p, %out[%i] : memref<?xf32>
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `zero` nest whose column loop carries a sum.
func.func @zero_with_a_sum(%x: memref<?x?xf32>, %out: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{this 'zero' nest is not of the form the lowering creates (for w { stores; for j { stores } }): a column loop yields values}}
  scf.for %r = %c0 to %m step %c1 {
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<?x?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    scf.for %j = %c0 to %n step %c1 {
      memref.store %s, %out[%r, %j] : memref<?x?xf32>
    }
  } {norm.stage = #norm.stage<zero>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `reduce` nest without its sum over partial rows.
func.func @reduce_without_sum(%ws: memref<4x8xf32>, %dw: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{this 'reduce' nest is not of the form the lowering creates (for j { s = for w { sum of loads }; stores }): it holds 'memref.load' before its sum}}
  scf.for %j = %c0 to %c8 step %c1 {
    %v = memref.load %ws[%c0, %j] : memref<4x8xf32>
    memref.store %v, %dw[%j] : memref<8xf32>
  } {norm.stage = #norm.stage<reduce>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `reduce` nest whose sum computes a memref (a view of the partial
// rows): the reduce kernel carries what the sum computes from a row from
// one step to the next, numbers only.
func.func @reduce_sum_of_views(%ws: memref<4x8xf32>, %dw: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{this 'reduce' nest is not of the form the lowering creates (for j { s = for w { sum of loads }; stores }): the sum's 'memref.subview' yields memref<1xf32, strided<[1], offset: ?>>, not a number}}
  scf.for %j = %c0 to %c8 step %c1 {
    %s = scf.for %w = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %row = memref.subview %ws[%w, %j] [1, 1] [1, 1] : memref<4x8xf32> to memref<1xf32, strided<[1], offset: ?>>
      %v = memref.load %row[%c0] : memref<1xf32, strided<[1], offset: ?>>
      %t = arith.addf %acc, %v : f32
      scf.yield %t : f32
    }
    memref.store %s, %dw[%j] : memref<8xf32>
  } {norm.stage = #norm.stage<reduce>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `forward` nest whose column loop starts at 1.
func.func @forward_offset_columns(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{this 'forward' nest is not of the form the lowering creates (for r { column loops }): a column loop does not run from 0 in steps of 1}}
  scf.for %r = %c0 to %m step %c1 {
    scf.for %j = %c1 to %c8 step %c1 {
      %v = memref.load %x[%r, %j] : memref<?x8xf32>
      memref.store %v, %y[%r, %j] : memref<?x8xf32>
    }
  } {norm.stage = #norm.stage<forward>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `forward` nest over zero columns (N = 0: a division by zero in the
// geometry before).
func.func @forward_no_columns(%x: memref<?x0xf32>, %y: memref<?x0xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a column loop runs over 0 columns}}
  scf.for %r = %c0 to %m step %c1 {
    scf.for %j = %c0 to %c0 step %c1 {
      %v = memref.load %x[%r, %j] : memref<?x0xf32>
      memref.store %v, %y[%r, %j] : memref<?x0xf32>
    }
  } {norm.stage = #norm.stage<forward>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A `dx` nest whose column loop holds a region.
func.func @dx_nested_region(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %m: index, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{a column loop holds 'scf.if'}}
  scf.for %p = %c0 to %m step %c1 {
    scf.for %r = %p to %m step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        scf.if %c {
          %v = memref.load %x[%r, %j] : memref<?x8xf32>
          memref.store %v, %y[%r, %j] : memref<?x8xf32>
        }
      }
    }
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// A lock (the spin loop of `locked`) in a nest of another strategy: the
// row kernel takes a row-level scf.while as the lock's acquire only in a
// `locked` nest.
func.func @dx_lock_not_locked(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %locks: memref<?xi32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{the row body holds a lock ('scf.while') but the nest's norm.strategy is not locked}}
  scf.for %p = %c0 to %m step %c1 {
    scf.for %r = %p to %m step %c1 {
      scf.while : () -> () {
        %one = arith.constant 1 : i32
        %old = memref.atomic_rmw assign %one, %locks[%p] : (i32, memref<?xi32>) -> i32
        %busy = arith.cmpi eq, %old, %one : i32
        scf.condition(%busy)
      } do {
        scf.yield
      }
      scf.for %j = %c0 to %c8 step %c1 {
        %v = memref.load %x[%r, %j] : memref<?x8xf32>
        memref.store %v, %y[%r, %j] : memref<?x8xf32>
      }
    }
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32, norm.strategy = #norm.strategy<deterministic>}
  return
}

// -----

// A dim of an out-of-range constant index, which upstream canonicalize
// crashed on once the mapping had moved it into a kernel (issue 8 item 5).
func.func @dim_out_of_range(%dy: memref<?x8xf32>, %x: memref<?x8xf32>, %r: memref<?xf32>, %dx: memref<?x8xf32>) {
  %c = arith.constant -1 : index
  // expected-error @+1 {{norm-map-to-gpu: dim -1 is out of range for 'memref<?x8xf32>'}}
  %m = memref.dim %x, %c : memref<?x8xf32>
  %v = memref.alloc(%m) : memref<?xf32>
  memref.dealloc %v : memref<?xf32>
  return
}
