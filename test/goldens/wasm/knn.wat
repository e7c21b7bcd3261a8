(module
  (type $t0 (func (param i32 i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1 65536 shared))
  (func $diff8_f32 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 v128) (local $l23 v128)
    local.get $p3
    i32.const 2
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      local.get $p5
      local.get $p1
      i32.load offset=8
      local.get $l9
      i32.mul
      i32.add
      local.set $l12
      local.get $p5
      local.get $p1
      i32.load offset=12
      local.get $l9
      i32.mul
      i32.add
      local.set $l13
      local.get $p5
      local.get $p1
      i32.load offset=16
      local.get $l9
      i32.mul
      i32.add
      local.set $l14
      local.get $p5
      local.get $p1
      i32.load offset=20
      local.get $l9
      i32.mul
      i32.add
      local.set $l15
      local.get $p5
      local.get $p1
      i32.load offset=24
      local.get $l9
      i32.mul
      i32.add
      local.set $l16
      local.get $p5
      local.get $p1
      i32.load offset=28
      local.get $l9
      i32.mul
      i32.add
      local.set $l17
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l18
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l19
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l20
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l21
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l22
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l18
        f64x2.add
        local.set $l18
        local.get $l13
        local.get $l6
        i32.add
        local.get $l12
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l19
        f64x2.add
        local.set $l19
        local.get $l15
        local.get $l6
        i32.add
        local.get $l14
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l20
        f64x2.add
        local.set $l20
        local.get $l17
        local.get $l6
        i32.add
        local.get $l16
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l21
        f64x2.add
        local.set $l21
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 4
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l18
      v128.store
      local.get $p4
      local.get $l19
      v128.store offset=16
      local.get $p4
      local.get $l20
      v128.store offset=32
      local.get $p4
      local.get $l21
      v128.store offset=48
      local.get $p4
      i32.const 64
      i32.add
      local.set $p4
      local.get $p1
      i32.const 32
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $diff2_f32 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128)
    local.get $p3
    i32.const 2
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l13
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.set $l14
        local.get $l13
        local.get $l14
        f64x2.sub
        local.tee $l14
        local.get $l14
        f64x2.mul
        local.get $l12
        f64x2.add
        local.set $l12
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 4
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l12
      v128.store
      local.get $p4
      i32.const 16
      i32.add
      local.set $p4
      local.get $p1
      i32.const 8
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $dot8_f32 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 v128) (local $l23 v128)
    local.get $p3
    i32.const 2
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      local.get $p5
      local.get $p1
      i32.load offset=8
      local.get $l9
      i32.mul
      i32.add
      local.set $l12
      local.get $p5
      local.get $p1
      i32.load offset=12
      local.get $l9
      i32.mul
      i32.add
      local.set $l13
      local.get $p5
      local.get $p1
      i32.load offset=16
      local.get $l9
      i32.mul
      i32.add
      local.set $l14
      local.get $p5
      local.get $p1
      i32.load offset=20
      local.get $l9
      i32.mul
      i32.add
      local.set $l15
      local.get $p5
      local.get $p1
      i32.load offset=24
      local.get $l9
      i32.mul
      i32.add
      local.set $l16
      local.get $p5
      local.get $p1
      i32.load offset=28
      local.get $l9
      i32.mul
      i32.add
      local.set $l17
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l18
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l19
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l20
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l21
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l22
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.get $l22
        f64x2.mul
        local.get $l18
        f64x2.add
        local.set $l18
        local.get $l13
        local.get $l6
        i32.add
        local.get $l12
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.get $l22
        f64x2.mul
        local.get $l19
        f64x2.add
        local.set $l19
        local.get $l15
        local.get $l6
        i32.add
        local.get $l14
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.get $l22
        f64x2.mul
        local.get $l20
        f64x2.add
        local.set $l20
        local.get $l17
        local.get $l6
        i32.add
        local.get $l16
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.get $l22
        f64x2.mul
        local.get $l21
        f64x2.add
        local.set $l21
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 4
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l18
      v128.store
      local.get $p4
      local.get $l19
      v128.store offset=16
      local.get $p4
      local.get $l20
      v128.store offset=32
      local.get $p4
      local.get $l21
      v128.store offset=48
      local.get $p4
      i32.const 64
      i32.add
      local.set $p4
      local.get $p1
      i32.const 32
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $dot2_f32 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128)
    local.get $p3
    i32.const 2
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l13
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load32_zero
        v128.load32_lane 1
        f64x2.promote_low_f32x4
        local.get $l13
        f64x2.mul
        local.get $l12
        f64x2.add
        local.set $l12
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 4
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l12
      v128.store
      local.get $p4
      i32.const 16
      i32.add
      local.set $p4
      local.get $p1
      i32.const 8
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $diff8_f64 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 v128) (local $l23 v128)
    local.get $p3
    i32.const 3
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      local.get $p5
      local.get $p1
      i32.load offset=8
      local.get $l9
      i32.mul
      i32.add
      local.set $l12
      local.get $p5
      local.get $p1
      i32.load offset=12
      local.get $l9
      i32.mul
      i32.add
      local.set $l13
      local.get $p5
      local.get $p1
      i32.load offset=16
      local.get $l9
      i32.mul
      i32.add
      local.set $l14
      local.get $p5
      local.get $p1
      i32.load offset=20
      local.get $l9
      i32.mul
      i32.add
      local.set $l15
      local.get $p5
      local.get $p1
      i32.load offset=24
      local.get $l9
      i32.mul
      i32.add
      local.set $l16
      local.get $p5
      local.get $p1
      i32.load offset=28
      local.get $l9
      i32.mul
      i32.add
      local.set $l17
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l18
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l19
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l20
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l21
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l22
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l18
        f64x2.add
        local.set $l18
        local.get $l13
        local.get $l6
        i32.add
        local.get $l12
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l19
        f64x2.add
        local.set $l19
        local.get $l15
        local.get $l6
        i32.add
        local.get $l14
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l20
        f64x2.add
        local.set $l20
        local.get $l17
        local.get $l6
        i32.add
        local.get $l16
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.set $l23
        local.get $l22
        local.get $l23
        f64x2.sub
        local.tee $l23
        local.get $l23
        f64x2.mul
        local.get $l21
        f64x2.add
        local.set $l21
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 8
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l18
      v128.store
      local.get $p4
      local.get $l19
      v128.store offset=16
      local.get $p4
      local.get $l20
      v128.store offset=32
      local.get $p4
      local.get $l21
      v128.store offset=48
      local.get $p4
      i32.const 64
      i32.add
      local.set $p4
      local.get $p1
      i32.const 32
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $diff2_f64 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128)
    local.get $p3
    i32.const 3
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l13
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.set $l14
        local.get $l13
        local.get $l14
        f64x2.sub
        local.tee $l14
        local.get $l14
        f64x2.mul
        local.get $l12
        f64x2.add
        local.set $l12
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 8
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l12
      v128.store
      local.get $p4
      i32.const 16
      i32.add
      local.set $p4
      local.get $p1
      i32.const 8
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $dot8_f64 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 v128) (local $l23 v128)
    local.get $p3
    i32.const 3
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      local.get $p5
      local.get $p1
      i32.load offset=8
      local.get $l9
      i32.mul
      i32.add
      local.set $l12
      local.get $p5
      local.get $p1
      i32.load offset=12
      local.get $l9
      i32.mul
      i32.add
      local.set $l13
      local.get $p5
      local.get $p1
      i32.load offset=16
      local.get $l9
      i32.mul
      i32.add
      local.set $l14
      local.get $p5
      local.get $p1
      i32.load offset=20
      local.get $l9
      i32.mul
      i32.add
      local.set $l15
      local.get $p5
      local.get $p1
      i32.load offset=24
      local.get $l9
      i32.mul
      i32.add
      local.set $l16
      local.get $p5
      local.get $p1
      i32.load offset=28
      local.get $l9
      i32.mul
      i32.add
      local.set $l17
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l18
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l19
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l20
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l21
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l22
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.get $l22
        f64x2.mul
        local.get $l18
        f64x2.add
        local.set $l18
        local.get $l13
        local.get $l6
        i32.add
        local.get $l12
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.get $l22
        f64x2.mul
        local.get $l19
        f64x2.add
        local.set $l19
        local.get $l15
        local.get $l6
        i32.add
        local.get $l14
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.get $l22
        f64x2.mul
        local.get $l20
        f64x2.add
        local.set $l20
        local.get $l17
        local.get $l6
        i32.add
        local.get $l16
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.get $l22
        f64x2.mul
        local.get $l21
        f64x2.add
        local.set $l21
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 8
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l18
      v128.store
      local.get $p4
      local.get $l19
      v128.store offset=16
      local.get $p4
      local.get $l20
      v128.store offset=32
      local.get $p4
      local.get $l21
      v128.store offset=48
      local.get $p4
      i32.const 64
      i32.add
      local.set $p4
      local.get $p1
      i32.const 32
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $dot2_f64 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128)
    local.get $p3
    i32.const 3
    i32.shl
    local.set $l9
    loop $L0
      local.get $p5
      local.get $p1
      i32.load
      local.get $l9
      i32.mul
      i32.add
      local.set $l10
      local.get $p5
      local.get $p1
      i32.load offset=4
      local.get $l9
      i32.mul
      i32.add
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      local.get $p0
      local.set $l7
      i32.const 0
      local.set $l6
      local.get $p3
      local.set $l8
      loop $L1
        local.get $l7
        v128.load64_splat
        local.set $l13
        local.get $l11
        local.get $l6
        i32.add
        local.get $l10
        local.get $l6
        i32.add
        v128.load64_zero
        v128.load64_lane 1
        local.get $l13
        f64x2.mul
        local.get $l12
        f64x2.add
        local.set $l12
        local.get $l7
        i32.const 8
        i32.add
        local.set $l7
        local.get $l6
        i32.const 8
        i32.add
        local.set $l6
        local.get $l8
        i32.const 1
        i32.sub
        local.tee $l8
        br_if $L1
      end
      local.get $p4
      local.get $l12
      v128.store
      local.get $p4
      i32.const 16
      i32.add
      local.set $p4
      local.get $p1
      i32.const 8
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (export "diff8_f32" (func $diff8_f32))
  (export "diff2_f32" (func $diff2_f32))
  (export "dot8_f32" (func $dot8_f32))
  (export "dot2_f32" (func $dot2_f32))
  (export "diff8_f64" (func $diff8_f64))
  (export "diff2_f64" (func $diff2_f64))
  (export "dot8_f64" (func $dot8_f64))
  (export "dot2_f64" (func $dot2_f64)))
