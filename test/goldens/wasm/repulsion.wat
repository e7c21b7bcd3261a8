(module
  (type $t0 (func (param i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $sum (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 v128) (local $l8 v128) (local $l9 v128) (local $l10 v128) (local $l11 v128) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 v128) (local $l23 v128)
    loop $L0
      local.get $p2
      v128.load64_splat
      local.set $l7
      local.get $p2
      v128.load64_splat offset=8
      local.set $l8
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l13
      local.get $p2
      v128.load64_splat offset=16
      local.set $l9
      local.get $p2
      v128.load64_splat offset=24
      local.set $l10
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l14
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l15
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l16
      local.get $p0
      local.set $l5
      local.get $p1
      local.set $l6
      loop $L1
        local.get $l5
        v128.load align=8
        local.set $l17
        local.get $l5
        v128.load offset=16 align=8
        local.set $l18
        local.get $l5
        v128.load offset=32 align=8
        local.set $l19
        local.get $l7
        local.get $l17
        f64x2.sub
        local.set $l20
        local.get $l8
        local.get $l18
        f64x2.sub
        local.set $l21
        v128.const i32x4 0x00000000 0x3ff00000 0x00000000 0x3ff00000
        v128.const i32x4 0x00000000 0x3ff00000 0x00000000 0x3ff00000
        local.get $l20
        local.get $l20
        f64x2.mul
        f64x2.add
        local.get $l21
        local.get $l21
        f64x2.mul
        f64x2.add
        f64x2.div
        local.set $l22
        local.get $l19
        local.get $l22
        f64x2.mul
        local.set $l23
        local.get $l11
        local.get $l23
        f64x2.add
        local.set $l11
        local.get $l23
        local.get $l22
        f64x2.mul
        local.set $l23
        local.get $l12
        local.get $l23
        local.get $l20
        f64x2.mul
        f64x2.add
        local.set $l12
        local.get $l13
        local.get $l23
        local.get $l21
        f64x2.mul
        f64x2.add
        local.set $l13
        local.get $l9
        local.get $l17
        f64x2.sub
        local.set $l20
        local.get $l10
        local.get $l18
        f64x2.sub
        local.set $l21
        v128.const i32x4 0x00000000 0x3ff00000 0x00000000 0x3ff00000
        v128.const i32x4 0x00000000 0x3ff00000 0x00000000 0x3ff00000
        local.get $l20
        local.get $l20
        f64x2.mul
        f64x2.add
        local.get $l21
        local.get $l21
        f64x2.mul
        f64x2.add
        f64x2.div
        local.set $l22
        local.get $l19
        local.get $l22
        f64x2.mul
        local.set $l23
        local.get $l14
        local.get $l23
        f64x2.add
        local.set $l14
        local.get $l23
        local.get $l22
        f64x2.mul
        local.set $l23
        local.get $l15
        local.get $l23
        local.get $l20
        f64x2.mul
        f64x2.add
        local.set $l15
        local.get $l16
        local.get $l23
        local.get $l21
        f64x2.mul
        f64x2.add
        local.set $l16
        local.get $l5
        i32.const 48
        i32.add
        local.set $l5
        local.get $l6
        i32.const 1
        i32.sub
        local.tee $l6
        br_if $L1
      end
      local.get $p4
      local.get $l11
      f64x2.extract_lane 0
      local.get $l11
      f64x2.extract_lane 1
      f64.add
      f64.store
      local.get $p4
      local.get $l12
      f64x2.extract_lane 0
      local.get $l12
      f64x2.extract_lane 1
      f64.add
      f64.store offset=8
      local.get $p4
      local.get $l13
      f64x2.extract_lane 0
      local.get $l13
      f64x2.extract_lane 1
      f64.add
      f64.store offset=16
      local.get $p4
      local.get $l14
      f64x2.extract_lane 0
      local.get $l14
      f64x2.extract_lane 1
      f64.add
      f64.store offset=24
      local.get $p4
      local.get $l15
      f64x2.extract_lane 0
      local.get $l15
      f64x2.extract_lane 1
      f64.add
      f64.store offset=32
      local.get $p4
      local.get $l16
      f64x2.extract_lane 0
      local.get $l16
      f64x2.extract_lane 1
      f64.add
      f64.store offset=40
      local.get $p2
      i32.const 32
      i32.add
      local.set $p2
      local.get $p4
      i32.const 48
      i32.add
      local.set $p4
      local.get $p3
      i32.const 1
      i32.sub
      local.tee $p3
      br_if $L0
    end)
  (export "sum" (func $sum)))
