// The dialect verifies the stage contract's attributes: type and place.
// RUN: norm-opt %s -split-input-file -verify-diagnostics

func.func @stage_string(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'norm.stage' must be a #norm.stage, got "dx"}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.stage = "dx"}
  return
}

// -----

func.func @stage_on_a_value(%n: index) {
  // expected-error @+1 {{'norm.stage' belongs on a loop nest, not on 'arith.constant'}}
  %c0 = arith.constant {norm.stage = #norm.stage<dx>} 0 : index
  return
}

// -----

func.func @accumulate_int(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'norm.accumulate' must be a float type, got i32}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.stage = #norm.stage<dx>, norm.accumulate = i32}
  return
}

// -----

func.func @id_string(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'norm.id' must be an integer, got "a"}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.stage = #norm.stage<dx>, norm.id = "a"}
  return
}

// -----

func.func @strategy_string(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'norm.strategy' must be a #norm.strategy, got "locked"}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.stage = #norm.stage<dx>, norm.strategy = "locked"}
  return
}

// -----

func.func @row_cache_on_a_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'norm.row_cache' belongs on a buffer allocation, not on 'scf.for'}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.row_cache}
  return
}

// -----

func.func @recomputable_valued(%n: index) {
  // expected-error @+1 {{'norm.recomputable' must be a unit attribute, got true}}
  %h = memref.alloc(%n) {norm.recomputable = true} : memref<?xf32>
  return
}

// -----

// expected-error @+1 {{'norm.kernels' must be an array, got "k"}}
func.func @kernels_string() attributes {norm.kernels = "k"} {
  return
}

// -----

// expected-error @+1 {{unknown norm dialect attribute 'norm.private'}}
func.func @old_name(%n: index) attributes {norm.private} {
  return
}
