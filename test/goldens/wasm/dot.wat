(module
  (type $t0 (func (param i32 i32 i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $dist (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32) (param $p6 i32)
    (local $l7 i32) (local $l8 i32) (local $l9 v128) (local $l10 v128) (local $l11 v128) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128)
    loop $L0
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l9
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l10
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l13
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l14
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l15
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l16
      local.get $p0
      local.set $l8
      local.get $p3
      local.set $l7
      loop $L1
        local.get $p1
        v128.load align=8
        local.set $l17
        local.get $p1
        v128.load offset=16 align=8
        local.set $l18
        local.get $l9
        local.get $l8
        v128.load64_splat
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l9
        local.get $l10
        local.get $l8
        v128.load64_splat
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l10
        local.get $l11
        local.get $l8
        v128.load64_splat offset=8
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l11
        local.get $l12
        local.get $l8
        v128.load64_splat offset=8
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l12
        local.get $l13
        local.get $l8
        v128.load64_splat offset=16
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l13
        local.get $l14
        local.get $l8
        v128.load64_splat offset=16
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l14
        local.get $l15
        local.get $l8
        v128.load64_splat offset=24
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l15
        local.get $l16
        local.get $l8
        v128.load64_splat offset=24
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l16
        local.get $l8
        i32.const 32
        i32.add
        local.set $l8
        local.get $p1
        i32.const 32
        i32.add
        local.set $p1
        local.get $l7
        i32.const 1
        i32.sub
        local.tee $l7
        br_if $L1
      end
      local.get $p4
      local.get $p5
      v128.load64_splat
      local.get $p6
      v128.load align=8
      f64x2.add
      local.get $l9
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store align=8
      local.get $p4
      local.get $p5
      v128.load64_splat
      local.get $p6
      v128.load offset=16 align=8
      f64x2.add
      local.get $l10
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=16 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=8
      local.get $p6
      v128.load align=8
      f64x2.add
      local.get $l11
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=2048 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=8
      local.get $p6
      v128.load offset=16 align=8
      f64x2.add
      local.get $l12
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=2064 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=16
      local.get $p6
      v128.load align=8
      f64x2.add
      local.get $l13
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=4096 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=16
      local.get $p6
      v128.load offset=16 align=8
      f64x2.add
      local.get $l14
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=4112 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=24
      local.get $p6
      v128.load align=8
      f64x2.add
      local.get $l15
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=6144 align=8
      local.get $p4
      local.get $p5
      v128.load64_splat offset=24
      local.get $p6
      v128.load offset=16 align=8
      f64x2.add
      local.get $l16
      v128.const i32x4 0x00000000 0x40000000 0x00000000 0x40000000
      f64x2.mul
      f64x2.sub
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.max
      v128.store offset=6160 align=8
      local.get $p4
      i32.const 32
      i32.add
      local.set $p4
      local.get $p6
      i32.const 32
      i32.add
      local.set $p6
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $dots (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32) (param $p6 i32)
    (local $l7 i32) (local $l8 i32) (local $l9 v128) (local $l10 v128) (local $l11 v128) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128)
    loop $L0
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l9
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l10
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l11
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l12
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l13
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l14
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l15
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l16
      local.get $p0
      local.set $l8
      local.get $p3
      local.set $l7
      loop $L1
        local.get $p1
        v128.load align=8
        local.set $l17
        local.get $p1
        v128.load offset=16 align=8
        local.set $l18
        local.get $l9
        local.get $l8
        v128.load64_splat
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l9
        local.get $l10
        local.get $l8
        v128.load64_splat
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l10
        local.get $l11
        local.get $l8
        v128.load64_splat offset=8
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l11
        local.get $l12
        local.get $l8
        v128.load64_splat offset=8
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l12
        local.get $l13
        local.get $l8
        v128.load64_splat offset=16
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l13
        local.get $l14
        local.get $l8
        v128.load64_splat offset=16
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l14
        local.get $l15
        local.get $l8
        v128.load64_splat offset=24
        local.get $l17
        f64x2.mul
        f64x2.add
        local.set $l15
        local.get $l16
        local.get $l8
        v128.load64_splat offset=24
        local.get $l18
        f64x2.mul
        f64x2.add
        local.set $l16
        local.get $l8
        i32.const 32
        i32.add
        local.set $l8
        local.get $p1
        i32.const 32
        i32.add
        local.set $p1
        local.get $l7
        i32.const 1
        i32.sub
        local.tee $l7
        br_if $L1
      end
      local.get $p4
      local.get $l9
      v128.store align=8
      local.get $p4
      local.get $l10
      v128.store offset=16 align=8
      local.get $p4
      local.get $l11
      v128.store offset=2048 align=8
      local.get $p4
      local.get $l12
      v128.store offset=2064 align=8
      local.get $p4
      local.get $l13
      v128.store offset=4096 align=8
      local.get $p4
      local.get $l14
      v128.store offset=4112 align=8
      local.get $p4
      local.get $l15
      v128.store offset=6144 align=8
      local.get $p4
      local.get $l16
      v128.store offset=6160 align=8
      local.get $p4
      i32.const 32
      i32.add
      local.set $p4
      local.get $p6
      i32.const 32
      i32.add
      local.set $p6
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (export "dist" (func $dist))
  (export "dots" (func $dots)))
