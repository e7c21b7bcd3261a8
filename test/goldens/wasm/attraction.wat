(module
  (type $t0 (func (param i32 i32 i32 i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $attract (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32) (param $p6 i32) (param $p7 i32)
    (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 f64)
    i32.const 0
    local.set $l8
    loop $L0
      local.get $p0
      local.get $p7
      local.get $l8
      i32.add
      i32.const 4
      i32.shl
      i32.add
      v128.load
      local.set $l12
      local.get $p1
      local.get $l8
      i32.const 2
      i32.shl
      i32.add
      i32.load
      local.set $l9
      local.get $p1
      local.get $l8
      i32.const 2
      i32.shl
      i32.add
      i32.load offset=4
      local.set $l10
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l13
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l14
      block $B1
        loop $L2
          local.get $l9
          i32.const 1
          i32.add
          local.get $l10
          i32.ge_s
          br_if $B1
          local.get $p2
          local.get $l9
          i32.const 2
          i32.shl
          i32.add
          i32.load
          local.set $l11
          local.get $l12
          local.get $p0
          local.get $l11
          i32.const 4
          i32.shl
          i32.add
          v128.load
          f64x2.sub
          local.tee $l15
          local.get $l15
          f64x2.mul
          local.set $l16
          local.get $p3
          local.get $l9
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.const 0x1p+0 (;=1;)
          local.get $l16
          f64x2.extract_lane 0
          f64.add
          local.get $l16
          f64x2.extract_lane 1
          f64.add
          f64.div
          local.set $l17
          local.get $l13
          local.get $l17
          f64x2.splat
          local.get $l15
          f64x2.mul
          f64x2.add
          local.set $l13
          local.get $p2
          local.get $l9
          i32.const 2
          i32.shl
          i32.add
          i32.load offset=4
          local.set $l11
          local.get $l12
          local.get $p0
          local.get $l11
          i32.const 4
          i32.shl
          i32.add
          v128.load
          f64x2.sub
          local.tee $l15
          local.get $l15
          f64x2.mul
          local.set $l16
          local.get $p3
          local.get $l9
          i32.const 3
          i32.shl
          i32.add
          f64.load offset=8
          f64.const 0x1p+0 (;=1;)
          local.get $l16
          f64x2.extract_lane 0
          f64.add
          local.get $l16
          f64x2.extract_lane 1
          f64.add
          f64.div
          local.set $l17
          local.get $l14
          local.get $l17
          f64x2.splat
          local.get $l15
          f64x2.mul
          f64x2.add
          local.set $l14
          local.get $l9
          i32.const 2
          i32.add
          local.set $l9
          br $L2
        end
      end
      local.get $l9
      local.get $l10
      i32.lt_s
      if $I3
        local.get $p2
        local.get $l9
        i32.const 2
        i32.shl
        i32.add
        i32.load
        local.set $l11
        local.get $l12
        local.get $p0
        local.get $l11
        i32.const 4
        i32.shl
        i32.add
        v128.load
        f64x2.sub
        local.tee $l15
        local.get $l15
        f64x2.mul
        local.set $l16
        local.get $p3
        local.get $l9
        i32.const 3
        i32.shl
        i32.add
        f64.load
        f64.const 0x1p+0 (;=1;)
        local.get $l16
        f64x2.extract_lane 0
        f64.add
        local.get $l16
        f64x2.extract_lane 1
        f64.add
        f64.div
        local.set $l17
        local.get $l13
        local.get $l17
        f64x2.splat
        local.get $l15
        f64x2.mul
        f64x2.add
        local.set $l13
      end
      local.get $p5
      local.get $l8
      i32.const 4
      i32.shl
      i32.add
      local.get $p6
      v128.load64_splat
      local.get $l13
      local.get $l14
      f64x2.add
      f64x2.mul
      v128.store
      local.get $l8
      i32.const 1
      i32.add
      local.tee $l8
      local.get $p4
      i32.lt_s
      br_if $L0
    end)
  (export "attract" (func $attract)))
