(module
  (type $t0 (func (param i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $bf16 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128)
    loop $L0
      local.get $p0
      local.get $l5
      local.get $p2
      i32.mul
      i32.add
      local.set $l8
      local.get $p4
      local.set $l7
      local.get $p3
      local.set $l6
      loop $L1
        local.get $l8
        v128.load align=1
        local.set $l12
        local.get $l12
        i32x4.extend_low_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l16
        local.get $l7
        local.get $l7
        v128.load align=1
        local.get $l16
        f32x4.add
        v128.store align=1
        local.get $l12
        i32x4.extend_high_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l16
        local.get $l7
        local.get $l7
        v128.load offset=16 align=1
        local.get $l16
        f32x4.add
        v128.store offset=16 align=1
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l7
        i32.const 32
        i32.add
        local.set $l7
        local.get $l6
        i32.const 1
        i32.sub
        local.tee $l6
        br_if $L1
      end
      local.get $l5
      i32.const 1
      i32.add
      local.tee $l5
      local.get $p1
      i32.lt_u
      br_if $L0
    end)
  (func $bf16x4 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128)
    loop $L0
      local.get $p0
      local.get $l5
      local.get $p2
      i32.mul
      i32.add
      local.set $l8
      local.get $p0
      local.get $l5
      i32.const 1
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l9
      local.get $p0
      local.get $l5
      i32.const 2
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l10
      local.get $p0
      local.get $l5
      i32.const 3
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l11
      local.get $p4
      local.set $l7
      local.get $p3
      local.set $l6
      loop $L1
        local.get $l8
        v128.load align=1
        local.set $l12
        local.get $l9
        v128.load align=1
        local.set $l13
        local.get $l10
        v128.load align=1
        local.set $l14
        local.get $l11
        v128.load align=1
        local.set $l15
        local.get $l12
        i32x4.extend_low_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l16
        local.get $l13
        i32x4.extend_low_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l17
        local.get $l14
        i32x4.extend_low_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l18
        local.get $l15
        i32x4.extend_low_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l19
        local.get $l7
        local.get $l7
        v128.load align=1
        local.get $l16
        f32x4.add
        local.get $l17
        f32x4.add
        local.get $l18
        f32x4.add
        local.get $l19
        f32x4.add
        v128.store align=1
        local.get $l12
        i32x4.extend_high_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l16
        local.get $l13
        i32x4.extend_high_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l17
        local.get $l14
        i32x4.extend_high_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l18
        local.get $l15
        i32x4.extend_high_i16x8_u
        i32.const 16
        i32x4.shl
        v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
        v128.and
        local.set $l19
        local.get $l7
        local.get $l7
        v128.load offset=16 align=1
        local.get $l16
        f32x4.add
        local.get $l17
        f32x4.add
        local.get $l18
        f32x4.add
        local.get $l19
        f32x4.add
        v128.store offset=16 align=1
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l9
        i32.const 16
        i32.add
        local.set $l9
        local.get $l10
        i32.const 16
        i32.add
        local.set $l10
        local.get $l11
        i32.const 16
        i32.add
        local.set $l11
        local.get $l7
        i32.const 32
        i32.add
        local.set $l7
        local.get $l6
        i32.const 1
        i32.sub
        local.tee $l6
        br_if $L1
      end
      local.get $l5
      i32.const 4
      i32.add
      local.tee $l5
      local.get $p1
      i32.lt_u
      br_if $L0
    end)
  (func $f32 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128)
    loop $L0
      local.get $p0
      local.get $l5
      local.get $p2
      i32.mul
      i32.add
      local.set $l8
      local.get $p4
      local.set $l7
      local.get $p3
      local.set $l6
      loop $L1
        local.get $l8
        v128.load align=1
        f32x4.abs
        local.set $l16
        local.get $l7
        local.get $l7
        v128.load align=1
        local.get $l16
        f32x4.add
        v128.store align=1
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l7
        i32.const 16
        i32.add
        local.set $l7
        local.get $l6
        i32.const 1
        i32.sub
        local.tee $l6
        br_if $L1
      end
      local.get $l5
      i32.const 1
      i32.add
      local.tee $l5
      local.get $p1
      i32.lt_u
      br_if $L0
    end)
  (func $f32x4 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128)
    loop $L0
      local.get $p0
      local.get $l5
      local.get $p2
      i32.mul
      i32.add
      local.set $l8
      local.get $p0
      local.get $l5
      i32.const 1
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l9
      local.get $p0
      local.get $l5
      i32.const 2
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l10
      local.get $p0
      local.get $l5
      i32.const 3
      i32.add
      local.get $p2
      i32.mul
      i32.add
      local.set $l11
      local.get $p4
      local.set $l7
      local.get $p3
      local.set $l6
      loop $L1
        local.get $l8
        v128.load align=1
        f32x4.abs
        local.set $l16
        local.get $l9
        v128.load align=1
        f32x4.abs
        local.set $l17
        local.get $l10
        v128.load align=1
        f32x4.abs
        local.set $l18
        local.get $l11
        v128.load align=1
        f32x4.abs
        local.set $l19
        local.get $l7
        local.get $l7
        v128.load align=1
        local.get $l16
        f32x4.add
        local.get $l17
        f32x4.add
        local.get $l18
        f32x4.add
        local.get $l19
        f32x4.add
        v128.store align=1
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l9
        i32.const 16
        i32.add
        local.set $l9
        local.get $l10
        i32.const 16
        i32.add
        local.set $l10
        local.get $l11
        i32.const 16
        i32.add
        local.set $l11
        local.get $l7
        i32.const 16
        i32.add
        local.set $l7
        local.get $l6
        i32.const 1
        i32.sub
        local.tee $l6
        br_if $L1
      end
      local.get $l5
      i32.const 4
      i32.add
      local.tee $l5
      local.get $p1
      i32.lt_u
      br_if $L0
    end)
  (func $addf64 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    loop $L0
      local.get $p0
      local.get $p0
      v128.load align=1
      local.get $p1
      v128.load align=1
      f64x2.add
      v128.store align=1
      local.get $p0
      i32.const 16
      i32.add
      local.set $p0
      local.get $p1
      i32.const 16
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $poolrow (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 v128) (local $l7 v128)
    loop $L0
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l6
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l7
      local.get $p3
      local.set $l5
      loop $L1
        local.get $l6
        local.get $p1
        v128.load align=1
        local.get $p0
        v128.load64_zero align=1
        f64x2.promote_low_f32x4
        f64x2.mul
        f64x2.add
        local.set $l6
        local.get $l7
        local.get $p1
        v128.load offset=16 align=1
        local.get $p0
        v128.load64_zero offset=8 align=1
        f64x2.promote_low_f32x4
        f64x2.mul
        f64x2.add
        local.set $l7
        local.get $p0
        i32.const 16
        i32.add
        local.set $p0
        local.get $p1
        i32.const 32
        i32.add
        local.set $p1
        local.get $l5
        i32.const 1
        i32.sub
        local.tee $l5
        br_if $L1
      end
      local.get $p4
      local.get $l6
      v128.store align=1
      local.get $p4
      local.get $l7
      v128.store offset=16 align=1
      local.get $p4
      i32.const 32
      i32.add
      local.set $p4
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $addgroups (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128)
    loop $L0
      local.get $p0
      i32.load
      local.get $p3
      i32.add
      local.set $l5
      local.get $p0
      i32.load offset=4
      local.set $l6
      local.get $p2
      local.set $l7
      local.get $p3
      local.set $l10
      loop $L1
        local.get $l5
        v128.load align=1
        local.set $l12
        local.get $p0
        i32.const 8
        i32.add
        local.set $l8
        local.get $l6
        local.set $l9
        loop $L2
          local.get $l8
          i32.load
          local.get $l10
          i32.add
          local.set $l11
          local.get $l12
          local.get $l11
          v128.load align=1
          f64x2.add
          local.set $l12
          local.get $l8
          i32.const 4
          i32.add
          local.set $l8
          local.get $l9
          i32.const 1
          i32.sub
          local.tee $l9
          br_if $L2
        end
        local.get $l5
        local.get $l12
        v128.store align=1
        local.get $l5
        i32.const 16
        i32.add
        local.set $l5
        local.get $l10
        i32.const 16
        i32.add
        local.set $l10
        local.get $l7
        i32.const 1
        i32.sub
        local.tee $l7
        br_if $L1
      end
      local.get $p0
      i32.const 8
      i32.add
      local.get $l6
      i32.const 4
      i32.mul
      i32.add
      local.set $p0
      local.get $p1
      i32.const 1
      i32.sub
      local.tee $p1
      br_if $L0
    end)
  (func $addgroups4 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128)
    loop $L0
      local.get $p0
      i32.load
      local.get $p3
      i32.add
      local.set $l5
      local.get $p0
      i32.load offset=4
      local.set $l6
      local.get $p2
      local.set $l7
      local.get $p3
      local.set $l10
      loop $L1
        local.get $l5
        v128.load align=1
        local.set $l12
        local.get $l5
        v128.load offset=16 align=1
        local.set $l13
        local.get $l5
        v128.load offset=32 align=1
        local.set $l14
        local.get $l5
        v128.load offset=48 align=1
        local.set $l15
        local.get $p0
        i32.const 8
        i32.add
        local.set $l8
        local.get $l6
        local.set $l9
        loop $L2
          local.get $l8
          i32.load
          local.get $l10
          i32.add
          local.set $l11
          local.get $l12
          local.get $l11
          v128.load align=1
          f64x2.add
          local.set $l12
          local.get $l13
          local.get $l11
          v128.load offset=16 align=1
          f64x2.add
          local.set $l13
          local.get $l14
          local.get $l11
          v128.load offset=32 align=1
          f64x2.add
          local.set $l14
          local.get $l15
          local.get $l11
          v128.load offset=48 align=1
          f64x2.add
          local.set $l15
          local.get $l8
          i32.const 4
          i32.add
          local.set $l8
          local.get $l9
          i32.const 1
          i32.sub
          local.tee $l9
          br_if $L2
        end
        local.get $l5
        local.get $l12
        v128.store align=1
        local.get $l5
        local.get $l13
        v128.store offset=16 align=1
        local.get $l5
        local.get $l14
        v128.store offset=32 align=1
        local.get $l5
        local.get $l15
        v128.store offset=48 align=1
        local.get $l5
        i32.const 64
        i32.add
        local.set $l5
        local.get $l10
        i32.const 64
        i32.add
        local.set $l10
        local.get $l7
        i32.const 4
        i32.sub
        local.tee $l7
        br_if $L1
      end
      local.get $p0
      i32.const 8
      i32.add
      local.get $l6
      i32.const 4
      i32.mul
      i32.add
      local.set $p0
      local.get $p1
      i32.const 1
      i32.sub
      local.tee $p1
      br_if $L0
    end)
  (func $addgroups8 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128)
    loop $L0
      local.get $p0
      i32.load
      local.get $p3
      i32.add
      local.set $l5
      local.get $p0
      i32.load offset=4
      local.set $l6
      local.get $p2
      local.set $l7
      local.get $p3
      local.set $l10
      loop $L1
        local.get $l5
        v128.load align=1
        local.set $l12
        local.get $l5
        v128.load offset=16 align=1
        local.set $l13
        local.get $l5
        v128.load offset=32 align=1
        local.set $l14
        local.get $l5
        v128.load offset=48 align=1
        local.set $l15
        local.get $l5
        v128.load offset=64 align=1
        local.set $l16
        local.get $l5
        v128.load offset=80 align=1
        local.set $l17
        local.get $l5
        v128.load offset=96 align=1
        local.set $l18
        local.get $l5
        v128.load offset=112 align=1
        local.set $l19
        local.get $p0
        i32.const 8
        i32.add
        local.set $l8
        local.get $l6
        local.set $l9
        loop $L2
          local.get $l8
          i32.load
          local.get $l10
          i32.add
          local.set $l11
          local.get $l12
          local.get $l11
          v128.load align=1
          f64x2.add
          local.set $l12
          local.get $l13
          local.get $l11
          v128.load offset=16 align=1
          f64x2.add
          local.set $l13
          local.get $l14
          local.get $l11
          v128.load offset=32 align=1
          f64x2.add
          local.set $l14
          local.get $l15
          local.get $l11
          v128.load offset=48 align=1
          f64x2.add
          local.set $l15
          local.get $l16
          local.get $l11
          v128.load offset=64 align=1
          f64x2.add
          local.set $l16
          local.get $l17
          local.get $l11
          v128.load offset=80 align=1
          f64x2.add
          local.set $l17
          local.get $l18
          local.get $l11
          v128.load offset=96 align=1
          f64x2.add
          local.set $l18
          local.get $l19
          local.get $l11
          v128.load offset=112 align=1
          f64x2.add
          local.set $l19
          local.get $l8
          i32.const 4
          i32.add
          local.set $l8
          local.get $l9
          i32.const 1
          i32.sub
          local.tee $l9
          br_if $L2
        end
        local.get $l5
        local.get $l12
        v128.store align=1
        local.get $l5
        local.get $l13
        v128.store offset=16 align=1
        local.get $l5
        local.get $l14
        v128.store offset=32 align=1
        local.get $l5
        local.get $l15
        v128.store offset=48 align=1
        local.get $l5
        local.get $l16
        v128.store offset=64 align=1
        local.get $l5
        local.get $l17
        v128.store offset=80 align=1
        local.get $l5
        local.get $l18
        v128.store offset=96 align=1
        local.get $l5
        local.get $l19
        v128.store offset=112 align=1
        local.get $l5
        i32.const 128
        i32.add
        local.set $l5
        local.get $l10
        i32.const 128
        i32.add
        local.set $l10
        local.get $l7
        i32.const 8
        i32.sub
        local.tee $l7
        br_if $L1
      end
      local.get $p0
      i32.const 8
      i32.add
      local.get $l6
      i32.const 4
      i32.mul
      i32.add
      local.set $p0
      local.get $p1
      i32.const 1
      i32.sub
      local.tee $p1
      br_if $L0
    end)
  (func $poolrow4 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 v128) (local $l13 v128) (local $l14 v128) (local $l15 v128) (local $l16 v128) (local $l17 v128) (local $l18 v128) (local $l19 v128) (local $l20 v128) (local $l21 v128) (local $l22 f64)
    i32.const 0
    f64.load
    local.set $l22
    i32.const 0
    i32.load offset=8
    local.set $l6
    i32.const 0
    i32.load offset=12
    local.set $l7
    local.get $p1
    local.set $l8
    local.get $l8
    local.get $l6
    i32.add
    local.set $l9
    local.get $l9
    local.get $l6
    i32.add
    local.set $l10
    local.get $l10
    local.get $l6
    i32.add
    local.set $l11
    loop $L0
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l14
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l15
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l16
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l17
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l18
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l19
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l20
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l21
      local.get $p3
      local.set $l5
      loop $L1
        local.get $p0
        v128.load64_zero align=1
        f64x2.promote_low_f32x4
        local.set $l12
        local.get $p0
        v128.load64_zero offset=8 align=1
        f64x2.promote_low_f32x4
        local.set $l13
        local.get $l14
        local.get $l8
        v128.load align=1
        local.get $l12
        f64x2.mul
        f64x2.add
        local.set $l14
        local.get $l15
        local.get $l8
        v128.load offset=16 align=1
        local.get $l13
        f64x2.mul
        f64x2.add
        local.set $l15
        local.get $l16
        local.get $l9
        v128.load align=1
        local.get $l12
        f64x2.mul
        f64x2.add
        local.set $l16
        local.get $l17
        local.get $l9
        v128.load offset=16 align=1
        local.get $l13
        f64x2.mul
        f64x2.add
        local.set $l17
        local.get $l18
        local.get $l10
        v128.load align=1
        local.get $l12
        f64x2.mul
        f64x2.add
        local.set $l18
        local.get $l19
        local.get $l10
        v128.load offset=16 align=1
        local.get $l13
        f64x2.mul
        f64x2.add
        local.set $l19
        local.get $l20
        local.get $l11
        v128.load align=1
        local.get $l12
        f64x2.mul
        f64x2.add
        local.set $l20
        local.get $l21
        local.get $l11
        v128.load offset=16 align=1
        local.get $l13
        f64x2.mul
        f64x2.add
        local.set $l21
        local.get $l8
        i32.const 32
        i32.add
        local.set $l8
        local.get $l9
        i32.const 32
        i32.add
        local.set $l9
        local.get $l10
        i32.const 32
        i32.add
        local.set $l10
        local.get $l11
        i32.const 32
        i32.add
        local.set $l11
        local.get $p0
        i32.const 16
        i32.add
        local.set $p0
        local.get $l5
        i32.const 1
        i32.sub
        local.tee $l5
        br_if $L1
      end
      local.get $p4
      local.get $l14
      f64x2.extract_lane 0
      local.get $l14
      f64x2.extract_lane 1
      f64.add
      local.get $l15
      f64x2.extract_lane 0
      local.get $l15
      f64x2.extract_lane 1
      f64.add
      f64.add
      local.get $l22
      f64.div
      f32.demote_f64
      f32.store
      local.get $p4
      local.get $l7
      i32.const 1
      i32.mul
      i32.add
      local.get $l16
      f64x2.extract_lane 0
      local.get $l16
      f64x2.extract_lane 1
      f64.add
      local.get $l17
      f64x2.extract_lane 0
      local.get $l17
      f64x2.extract_lane 1
      f64.add
      f64.add
      local.get $l22
      f64.div
      f32.demote_f64
      f32.store
      local.get $p4
      local.get $l7
      i32.const 2
      i32.mul
      i32.add
      local.get $l18
      f64x2.extract_lane 0
      local.get $l18
      f64x2.extract_lane 1
      f64.add
      local.get $l19
      f64x2.extract_lane 0
      local.get $l19
      f64x2.extract_lane 1
      f64.add
      f64.add
      local.get $l22
      f64.div
      f32.demote_f64
      f32.store
      local.get $p4
      local.get $l7
      i32.const 3
      i32.mul
      i32.add
      local.get $l20
      f64x2.extract_lane 0
      local.get $l20
      f64x2.extract_lane 1
      f64.add
      local.get $l21
      f64x2.extract_lane 0
      local.get $l21
      f64x2.extract_lane 1
      f64.add
      f64.add
      local.get $l22
      f64.div
      f32.demote_f64
      f32.store
      local.get $p4
      i32.const 4
      i32.add
      local.set $p4
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $rms (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    loop $L0
      local.get $p1
      local.get $p0
      v128.load align=1
      local.get $p3
      v128.load64_splat
      f64x2.mul
      f64x2.sqrt
      v128.store align=1
      local.get $p0
      i32.const 16
      i32.add
      local.set $p0
      local.get $p1
      i32.const 16
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (func $spread (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 v128) (local $l11 v128) (local $l12 v128) (local $l13 v128)
    local.get $p3
    i32.load
    local.set $l5
    local.get $p3
    i32.load offset=4
    local.set $l6
    loop $L0
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l10
      local.get $p0
      local.set $l7
      local.get $p3
      i32.const 16
      i32.add
      local.set $l8
      local.get $l5
      local.set $l9
      loop $L1
        local.get $l7
        v128.load align=1
        local.tee $l13
        local.get $l13
        f64x2.mul
        local.get $l8
        v128.load64_splat
        f64x2.mul
        local.get $l10
        f64x2.add
        local.set $l10
        local.get $l7
        local.get $l6
        i32.add
        local.set $l7
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l9
        i32.const 1
        i32.sub
        local.tee $l9
        br_if $L1
      end
      local.get $l10
      local.get $p3
      v128.load64_splat offset=8
      f64x2.div
      f64x2.sqrt
      local.set $l10
      local.get $l10
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      f64x2.gt
      local.set $l12
      v128.const i32x4 0x00000000 0x00000000 0x00000000 0x00000000
      local.set $l11
      local.get $p0
      local.set $l7
      local.get $p3
      i32.const 16
      i32.add
      local.set $l8
      local.get $l5
      local.set $l9
      loop $L2
        local.get $l7
        v128.load align=1
        local.get $l10
        f64x2.div
        v128.const i32x4 0x00000000 0x3ff00000 0x00000000 0x3ff00000
        f64x2.sub
        local.tee $l13
        local.get $l13
        f64x2.mul
        local.get $l8
        v128.load64_splat offset=8
        f64x2.mul
        local.get $l12
        v128.and
        local.get $l11
        f64x2.add
        local.set $l11
        local.get $l7
        local.get $l6
        i32.add
        local.set $l7
        local.get $l8
        i32.const 16
        i32.add
        local.set $l8
        local.get $l9
        i32.const 1
        i32.sub
        local.tee $l9
        br_if $L2
      end
      local.get $p1
      local.get $l11
      v128.store align=1
      local.get $p0
      i32.const 16
      i32.add
      local.set $p0
      local.get $p1
      i32.const 16
      i32.add
      local.set $p1
      local.get $p2
      i32.const 1
      i32.sub
      local.tee $p2
      br_if $L0
    end)
  (export "bf16" (func $bf16))
  (export "bf16x4" (func $bf16x4))
  (export "f32" (func $f32))
  (export "f32x4" (func $f32x4))
  (export "addf64" (func $addf64))
  (export "poolrow" (func $poolrow))
  (export "addgroups" (func $addgroups))
  (export "addgroups4" (func $addgroups4))
  (export "addgroups8" (func $addgroups8))
  (export "poolrow4" (func $poolrow4))
  (export "rms" (func $rms))
  (export "spread" (func $spread)))
