// RUN: norm-opt %s --norm-unpack-bf16 | mlir-opt --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=i32 | FileCheck %s
// RUN: norm-opt %s --norm-unpack-bf16 | FileCheck %s --check-prefix=IR

// norm-unpack-bf16 executed on the CPU: each lane of a loaded vector of
// bf16 (1, 1.5, -0, the smallest subnormal, a NaN with a payload,
// -1.9921875, the largest finite, -inf), widened by the pass's shift or
// mask, against the same lanes widened as a vector by arith.extf (which
// the pass leaves alone), bit for bit. main returns the number of lanes
// that differ, plus 100 if lane 1 is not 1.5 (0x3FC00000): 0 when the
// lanes are right, whatever order a wrong rewrite would take them in.
// CHECK: {{^}}0{{$}}
// IR-NOT: arith.extf %e
// IR: arith.shli
// IR: arith.andi
// IR: arith.shli
// IR: arith.andi
// IR: arith.shli
// IR: arith.andi
// IR: arith.shli
// IR: arith.andi

memref.global "private" constant @lanes : memref<8xi16> = dense<[16256, 16320, -32768, 1, 32767, -16385, 32639, -128]>
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %g = memref.get_global @lanes : memref<8xi16>
  %w = vector.load %g[%c0] : memref<8xi16>, vector<8xi16>
  %v = vector.bitcast %w : vector<8xi16> to vector<8xbf16>
  %ref = arith.extf %v : vector<8xbf16> to vector<8xf32>
  %refi = vector.bitcast %ref : vector<8xf32> to vector<8xi32>
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %hundred = arith.constant 100 : i32
  %onehalf = arith.constant 1069547520 : i32
  %e0 = vector.extract %v[0] : bf16 from vector<8xbf16>
  %f0 = arith.extf %e0 : bf16 to f32
  %i0 = arith.bitcast %f0 : f32 to i32
  %r0 = vector.extract %refi[0] : i32 from vector<8xi32>
  %d0 = arith.cmpi ne, %i0, %r0 : i32
  %n0 = arith.select %d0, %one, %z : i32
  %s0 = arith.addi %z, %n0 : i32
  %e1 = vector.extract %v[1] : bf16 from vector<8xbf16>
  %f1 = arith.extf %e1 : bf16 to f32
  %i1 = arith.bitcast %f1 : f32 to i32
  %r1 = vector.extract %refi[1] : i32 from vector<8xi32>
  %d1 = arith.cmpi ne, %i1, %r1 : i32
  %n1 = arith.select %d1, %one, %z : i32
  %s1 = arith.addi %s0, %n1 : i32
  %e2 = vector.extract %v[2] : bf16 from vector<8xbf16>
  %f2 = arith.extf %e2 : bf16 to f32
  %i2 = arith.bitcast %f2 : f32 to i32
  %r2 = vector.extract %refi[2] : i32 from vector<8xi32>
  %d2 = arith.cmpi ne, %i2, %r2 : i32
  %n2 = arith.select %d2, %one, %z : i32
  %s2 = arith.addi %s1, %n2 : i32
  %e3 = vector.extract %v[3] : bf16 from vector<8xbf16>
  %f3 = arith.extf %e3 : bf16 to f32
  %i3 = arith.bitcast %f3 : f32 to i32
  %r3 = vector.extract %refi[3] : i32 from vector<8xi32>
  %d3 = arith.cmpi ne, %i3, %r3 : i32
  %n3 = arith.select %d3, %one, %z : i32
  %s3 = arith.addi %s2, %n3 : i32
  %e4 = vector.extract %v[4] : bf16 from vector<8xbf16>
  %f4 = arith.extf %e4 : bf16 to f32
  %i4 = arith.bitcast %f4 : f32 to i32
  %r4 = vector.extract %refi[4] : i32 from vector<8xi32>
  %d4 = arith.cmpi ne, %i4, %r4 : i32
  %n4 = arith.select %d4, %one, %z : i32
  %s4 = arith.addi %s3, %n4 : i32
  %e5 = vector.extract %v[5] : bf16 from vector<8xbf16>
  %f5 = arith.extf %e5 : bf16 to f32
  %i5 = arith.bitcast %f5 : f32 to i32
  %r5 = vector.extract %refi[5] : i32 from vector<8xi32>
  %d5 = arith.cmpi ne, %i5, %r5 : i32
  %n5 = arith.select %d5, %one, %z : i32
  %s5 = arith.addi %s4, %n5 : i32
  %e6 = vector.extract %v[6] : bf16 from vector<8xbf16>
  %f6 = arith.extf %e6 : bf16 to f32
  %i6 = arith.bitcast %f6 : f32 to i32
  %r6 = vector.extract %refi[6] : i32 from vector<8xi32>
  %d6 = arith.cmpi ne, %i6, %r6 : i32
  %n6 = arith.select %d6, %one, %z : i32
  %s6 = arith.addi %s5, %n6 : i32
  %e7 = vector.extract %v[7] : bf16 from vector<8xbf16>
  %f7 = arith.extf %e7 : bf16 to f32
  %i7 = arith.bitcast %f7 : f32 to i32
  %r7 = vector.extract %refi[7] : i32 from vector<8xi32>
  %d7 = arith.cmpi ne, %i7, %r7 : i32
  %n7 = arith.select %d7, %one, %z : i32
  %s7 = arith.addi %s6, %n7 : i32
  %bad = arith.cmpi ne, %i1, %onehalf : i32
  %p = arith.select %bad, %hundred, %z : i32
  %t = arith.addi %s7, %p : i32
  return %t : i32
}
