(module
  (type $t0 (func (param i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $sums (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $l5 i32) (local $l6 i32) (local $l7 i32) (local $l8 f64) (local $l9 f64) (local $l10 f64) (local $l11 f64)
    i32.const 0
    local.set $l5
    loop $L0
      local.get $p2
      local.get $l5
      i32.const 2
      i32.shl
      i32.add
      i32.load
      local.set $l6
      local.get $p2
      local.get $l5
      i32.const 2
      i32.shl
      i32.add
      i32.load offset=4
      local.set $l7
      f64.const 0x0p+0 (;=0;)
      local.set $l8
      f64.const 0x0p+0 (;=0;)
      local.set $l9
      f64.const 0x0p+0 (;=0;)
      local.set $l10
      f64.const 0x0p+0 (;=0;)
      local.set $l11
      block $B1
        loop $L2
          local.get $l6
          i32.const 3
          i32.add
          local.get $l7
          i32.ge_s
          br_if $B1
          local.get $l8
          local.get $p0
          local.get $p1
          local.get $l6
          i32.const 2
          i32.shl
          i32.add
          i32.load
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.add
          local.set $l8
          local.get $l9
          local.get $p0
          local.get $p1
          local.get $l6
          i32.const 2
          i32.shl
          i32.add
          i32.load offset=4
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.add
          local.set $l9
          local.get $l10
          local.get $p0
          local.get $p1
          local.get $l6
          i32.const 2
          i32.shl
          i32.add
          i32.load offset=8
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.add
          local.set $l10
          local.get $l11
          local.get $p0
          local.get $p1
          local.get $l6
          i32.const 2
          i32.shl
          i32.add
          i32.load offset=12
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.add
          local.set $l11
          local.get $l6
          i32.const 4
          i32.add
          local.set $l6
          br $L2
        end
      end
      block $B3
        loop $L4
          local.get $l6
          local.get $l7
          i32.ge_s
          br_if $B3
          local.get $l8
          local.get $p0
          local.get $p1
          local.get $l6
          i32.const 2
          i32.shl
          i32.add
          i32.load
          i32.const 3
          i32.shl
          i32.add
          f64.load
          f64.add
          local.set $l8
          local.get $l6
          i32.const 1
          i32.add
          local.set $l6
          br $L4
        end
      end
      local.get $p4
      local.get $l5
      i32.const 3
      i32.shl
      i32.add
      local.get $l8
      local.get $l9
      f64.add
      local.get $l10
      local.get $l11
      f64.add
      f64.add
      f64.store
      local.get $l5
      i32.const 1
      i32.add
      local.tee $l5
      local.get $p3
      i32.lt_s
      br_if $L0
    end)
  (export "sums" (func $sums)))
