(module
  (type $t0 (func (param i32 i32 i32 i32 i32 i32)))
  (import "env" "mem" (memory $env.mem 1))
  (func $r4 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 i32) (local $l19 i32) (local $l20 i32) (local $l21 v128) (local $l22 v128) (local $l23 v128) (local $l24 v128) (local $l25 v128) (local $l26 v128) (local $l27 v128) (local $l28 v128) (local $l29 v128) (local $l30 v128) (local $l31 v128) (local $l32 v128) (local $l33 v128) (local $l34 v128) (local $l35 v128) (local $l36 v128) (local $l37 v128) (local $l38 v128) (local $l39 v128) (local $l40 v128) (local $l41 v128) (local $l42 v128) (local $l43 v128) (local $l44 v128) (local $l45 v128) (local $l46 v128) (local $l47 v128) (local $l48 v128) (local $l49 v128) (local $l50 v128)
    local.get $p5
    f64.load
    f64x2.splat
    local.set $l27
    local.get $p5
    f64.load offset=8
    f64x2.splat
    local.set $l28
    local.get $p5
    f64.load offset=16
    f64x2.splat
    local.set $l29
    local.get $p5
    f64.load offset=24
    f64x2.splat
    local.set $l30
    local.get $p3
    local.get $p2
    i32.mul
    i32.const 128
    i32.mul
    local.set $l8
    local.get $p3
    i32.const 128
    i32.mul
    local.set $l9
    i32.const 0
    local.set $l6
    loop $L0
      local.get $p4
      f64.load
      f64x2.splat
      local.set $l21
      local.get $p4
      f64.load offset=8
      f64x2.splat
      local.set $l22
      local.get $p4
      f64.load offset=16
      f64x2.splat
      local.set $l23
      local.get $p4
      f64.load offset=24
      f64x2.splat
      local.set $l24
      local.get $p4
      f64.load offset=32
      f64x2.splat
      local.set $l25
      local.get $p4
      f64.load offset=40
      f64x2.splat
      local.set $l26
      local.get $p3
      local.get $l6
      i32.mul
      i32.const 128
      i32.mul
      local.set $l12
      local.get $p0
      local.get $l12
      i32.add
      local.set $l10
      local.get $p1
      local.get $l12
      i32.const 4
      i32.mul
      i32.add
      local.set $l11
      i32.const 0
      local.set $l7
      loop $L1
        local.get $l10
        local.set $l13
        local.get $l11
        local.set $l17
        local.get $l13
        local.get $l8
        i32.add
        local.set $l14
        local.get $l17
        local.get $l9
        i32.add
        local.set $l18
        local.get $l14
        local.get $l8
        i32.add
        local.set $l15
        local.get $l18
        local.get $l9
        i32.add
        local.set $l19
        local.get $l15
        local.get $l8
        i32.add
        local.set $l16
        local.get $l19
        local.get $l9
        i32.add
        local.set $l20
        local.get $l13
        v128.load
        local.set $l31
        local.get $l13
        v128.load offset=64
        local.set $l35
        local.get $l14
        v128.load
        local.set $l32
        local.get $l14
        v128.load offset=64
        local.set $l36
        local.get $l15
        v128.load
        local.set $l33
        local.get $l15
        v128.load offset=64
        local.set $l37
        local.get $l16
        v128.load
        local.set $l34
        local.get $l16
        v128.load offset=64
        local.set $l38
        local.get $l31
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l35
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l31
        local.get $l33
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l37
        f64x2.sub
        local.set $l42
        local.get $l32
        local.get $l34
        f64x2.add
        local.set $l43
        local.get $l36
        local.get $l38
        f64x2.add
        local.set $l44
        local.get $l32
        local.get $l34
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l38
        f64x2.sub
        local.set $l48
        local.get $l27
        local.get $l48
        f64x2.mul
        local.set $l45
        local.get $l28
        local.get $l47
        f64x2.mul
        local.set $l46
        local.get $l17
        local.get $l39
        local.get $l43
        f64x2.add
        v128.store
        local.get $l17
        local.get $l40
        local.get $l44
        f64x2.add
        v128.store offset=64
        local.get $l41
        local.get $l45
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l39
        local.get $l43
        f64x2.sub
        local.set $l49
        local.get $l40
        local.get $l44
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l41
        local.get $l45
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.sub
        local.set $l50
        local.get $l20
        local.get $l49
        local.get $l25
        f64x2.mul
        local.get $l50
        local.get $l26
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l20
        local.get $l49
        local.get $l26
        f64x2.mul
        local.get $l50
        local.get $l25
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l13
        v128.load offset=16
        local.set $l31
        local.get $l13
        v128.load offset=80
        local.set $l35
        local.get $l14
        v128.load offset=16
        local.set $l32
        local.get $l14
        v128.load offset=80
        local.set $l36
        local.get $l15
        v128.load offset=16
        local.set $l33
        local.get $l15
        v128.load offset=80
        local.set $l37
        local.get $l16
        v128.load offset=16
        local.set $l34
        local.get $l16
        v128.load offset=80
        local.set $l38
        local.get $l31
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l35
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l31
        local.get $l33
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l37
        f64x2.sub
        local.set $l42
        local.get $l32
        local.get $l34
        f64x2.add
        local.set $l43
        local.get $l36
        local.get $l38
        f64x2.add
        local.set $l44
        local.get $l32
        local.get $l34
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l38
        f64x2.sub
        local.set $l48
        local.get $l27
        local.get $l48
        f64x2.mul
        local.set $l45
        local.get $l28
        local.get $l47
        f64x2.mul
        local.set $l46
        local.get $l17
        local.get $l39
        local.get $l43
        f64x2.add
        v128.store offset=16
        local.get $l17
        local.get $l40
        local.get $l44
        f64x2.add
        v128.store offset=80
        local.get $l41
        local.get $l45
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l39
        local.get $l43
        f64x2.sub
        local.set $l49
        local.get $l40
        local.get $l44
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l41
        local.get $l45
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.sub
        local.set $l50
        local.get $l20
        local.get $l49
        local.get $l25
        f64x2.mul
        local.get $l50
        local.get $l26
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l20
        local.get $l49
        local.get $l26
        f64x2.mul
        local.get $l50
        local.get $l25
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l13
        v128.load offset=32
        local.set $l31
        local.get $l13
        v128.load offset=96
        local.set $l35
        local.get $l14
        v128.load offset=32
        local.set $l32
        local.get $l14
        v128.load offset=96
        local.set $l36
        local.get $l15
        v128.load offset=32
        local.set $l33
        local.get $l15
        v128.load offset=96
        local.set $l37
        local.get $l16
        v128.load offset=32
        local.set $l34
        local.get $l16
        v128.load offset=96
        local.set $l38
        local.get $l31
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l35
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l31
        local.get $l33
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l37
        f64x2.sub
        local.set $l42
        local.get $l32
        local.get $l34
        f64x2.add
        local.set $l43
        local.get $l36
        local.get $l38
        f64x2.add
        local.set $l44
        local.get $l32
        local.get $l34
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l38
        f64x2.sub
        local.set $l48
        local.get $l27
        local.get $l48
        f64x2.mul
        local.set $l45
        local.get $l28
        local.get $l47
        f64x2.mul
        local.set $l46
        local.get $l17
        local.get $l39
        local.get $l43
        f64x2.add
        v128.store offset=32
        local.get $l17
        local.get $l40
        local.get $l44
        f64x2.add
        v128.store offset=96
        local.get $l41
        local.get $l45
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l39
        local.get $l43
        f64x2.sub
        local.set $l49
        local.get $l40
        local.get $l44
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l41
        local.get $l45
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.sub
        local.set $l50
        local.get $l20
        local.get $l49
        local.get $l25
        f64x2.mul
        local.get $l50
        local.get $l26
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l20
        local.get $l49
        local.get $l26
        f64x2.mul
        local.get $l50
        local.get $l25
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l13
        v128.load offset=48
        local.set $l31
        local.get $l13
        v128.load offset=112
        local.set $l35
        local.get $l14
        v128.load offset=48
        local.set $l32
        local.get $l14
        v128.load offset=112
        local.set $l36
        local.get $l15
        v128.load offset=48
        local.set $l33
        local.get $l15
        v128.load offset=112
        local.set $l37
        local.get $l16
        v128.load offset=48
        local.set $l34
        local.get $l16
        v128.load offset=112
        local.set $l38
        local.get $l31
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l35
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l31
        local.get $l33
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l37
        f64x2.sub
        local.set $l42
        local.get $l32
        local.get $l34
        f64x2.add
        local.set $l43
        local.get $l36
        local.get $l38
        f64x2.add
        local.set $l44
        local.get $l32
        local.get $l34
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l38
        f64x2.sub
        local.set $l48
        local.get $l27
        local.get $l48
        f64x2.mul
        local.set $l45
        local.get $l28
        local.get $l47
        f64x2.mul
        local.set $l46
        local.get $l17
        local.get $l39
        local.get $l43
        f64x2.add
        v128.store offset=48
        local.get $l17
        local.get $l40
        local.get $l44
        f64x2.add
        v128.store offset=112
        local.get $l41
        local.get $l45
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l39
        local.get $l43
        f64x2.sub
        local.set $l49
        local.get $l40
        local.get $l44
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l41
        local.get $l45
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l46
        f64x2.sub
        local.set $l50
        local.get $l20
        local.get $l49
        local.get $l25
        f64x2.mul
        local.get $l50
        local.get $l26
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l20
        local.get $l49
        local.get $l26
        f64x2.mul
        local.get $l50
        local.get $l25
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l10
        i32.const 128
        i32.add
        local.set $l10
        local.get $l11
        i32.const 128
        i32.add
        local.set $l11
        local.get $l7
        i32.const 1
        i32.add
        local.tee $l7
        local.get $p3
        i32.ne
        br_if $L1
      end
      local.get $p4
      i32.const 48
      i32.add
      local.set $p4
      local.get $l6
      i32.const 1
      i32.add
      local.tee $l6
      local.get $p2
      i32.ne
      br_if $L0
    end)
  (func $r3 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 i32) (local $l19 i32) (local $l20 i32) (local $l21 v128) (local $l22 v128) (local $l23 v128) (local $l24 v128) (local $l25 v128) (local $l26 v128) (local $l27 v128) (local $l28 v128) (local $l29 v128) (local $l30 v128) (local $l31 v128) (local $l32 v128) (local $l33 v128) (local $l34 v128) (local $l35 v128) (local $l36 v128) (local $l37 v128) (local $l38 v128) (local $l39 v128) (local $l40 v128) (local $l41 v128) (local $l42 v128) (local $l43 v128) (local $l44 v128) (local $l45 v128) (local $l46 v128) (local $l47 v128) (local $l48 v128) (local $l49 v128) (local $l50 v128)
    local.get $p5
    f64.load
    f64x2.splat
    local.set $l27
    local.get $p5
    f64.load offset=8
    f64x2.splat
    local.set $l28
    local.get $p5
    f64.load offset=16
    f64x2.splat
    local.set $l29
    local.get $p5
    f64.load offset=24
    f64x2.splat
    local.set $l30
    local.get $p3
    local.get $p2
    i32.mul
    i32.const 128
    i32.mul
    local.set $l8
    local.get $p3
    i32.const 128
    i32.mul
    local.set $l9
    i32.const 0
    local.set $l6
    loop $L0
      local.get $p4
      f64.load
      f64x2.splat
      local.set $l21
      local.get $p4
      f64.load offset=8
      f64x2.splat
      local.set $l22
      local.get $p4
      f64.load offset=16
      f64x2.splat
      local.set $l23
      local.get $p4
      f64.load offset=24
      f64x2.splat
      local.set $l24
      local.get $p3
      local.get $l6
      i32.mul
      i32.const 128
      i32.mul
      local.set $l12
      local.get $p0
      local.get $l12
      i32.add
      local.set $l10
      local.get $p1
      local.get $l12
      i32.const 3
      i32.mul
      i32.add
      local.set $l11
      i32.const 0
      local.set $l7
      loop $L1
        local.get $l10
        local.set $l13
        local.get $l11
        local.set $l17
        local.get $l13
        local.get $l8
        i32.add
        local.set $l14
        local.get $l17
        local.get $l9
        i32.add
        local.set $l18
        local.get $l14
        local.get $l8
        i32.add
        local.set $l15
        local.get $l18
        local.get $l9
        i32.add
        local.set $l19
        local.get $l13
        v128.load
        local.set $l31
        local.get $l13
        v128.load offset=64
        local.set $l35
        local.get $l14
        v128.load
        local.set $l32
        local.get $l14
        v128.load offset=64
        local.set $l36
        local.get $l15
        v128.load
        local.set $l33
        local.get $l15
        v128.load offset=64
        local.set $l37
        local.get $l32
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l36
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l32
        local.get $l33
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l37
        f64x2.sub
        local.set $l48
        local.get $l31
        local.get $l30
        local.get $l39
        f64x2.mul
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l30
        local.get $l40
        f64x2.mul
        f64x2.sub
        local.set $l42
        local.get $l17
        local.get $l31
        local.get $l39
        f64x2.add
        v128.store
        local.get $l17
        local.get $l35
        local.get $l40
        f64x2.add
        v128.store offset=64
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l13
        v128.load offset=16
        local.set $l31
        local.get $l13
        v128.load offset=80
        local.set $l35
        local.get $l14
        v128.load offset=16
        local.set $l32
        local.get $l14
        v128.load offset=80
        local.set $l36
        local.get $l15
        v128.load offset=16
        local.set $l33
        local.get $l15
        v128.load offset=80
        local.set $l37
        local.get $l32
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l36
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l32
        local.get $l33
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l37
        f64x2.sub
        local.set $l48
        local.get $l31
        local.get $l30
        local.get $l39
        f64x2.mul
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l30
        local.get $l40
        f64x2.mul
        f64x2.sub
        local.set $l42
        local.get $l17
        local.get $l31
        local.get $l39
        f64x2.add
        v128.store offset=16
        local.get $l17
        local.get $l35
        local.get $l40
        f64x2.add
        v128.store offset=80
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l13
        v128.load offset=32
        local.set $l31
        local.get $l13
        v128.load offset=96
        local.set $l35
        local.get $l14
        v128.load offset=32
        local.set $l32
        local.get $l14
        v128.load offset=96
        local.set $l36
        local.get $l15
        v128.load offset=32
        local.set $l33
        local.get $l15
        v128.load offset=96
        local.set $l37
        local.get $l32
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l36
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l32
        local.get $l33
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l37
        f64x2.sub
        local.set $l48
        local.get $l31
        local.get $l30
        local.get $l39
        f64x2.mul
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l30
        local.get $l40
        f64x2.mul
        f64x2.sub
        local.set $l42
        local.get $l17
        local.get $l31
        local.get $l39
        f64x2.add
        v128.store offset=32
        local.get $l17
        local.get $l35
        local.get $l40
        f64x2.add
        v128.store offset=96
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l13
        v128.load offset=48
        local.set $l31
        local.get $l13
        v128.load offset=112
        local.set $l35
        local.get $l14
        v128.load offset=48
        local.set $l32
        local.get $l14
        v128.load offset=112
        local.set $l36
        local.get $l15
        v128.load offset=48
        local.set $l33
        local.get $l15
        v128.load offset=112
        local.set $l37
        local.get $l32
        local.get $l33
        f64x2.add
        local.set $l39
        local.get $l36
        local.get $l37
        f64x2.add
        local.set $l40
        local.get $l32
        local.get $l33
        f64x2.sub
        local.set $l47
        local.get $l36
        local.get $l37
        f64x2.sub
        local.set $l48
        local.get $l31
        local.get $l30
        local.get $l39
        f64x2.mul
        f64x2.sub
        local.set $l41
        local.get $l35
        local.get $l30
        local.get $l40
        f64x2.mul
        f64x2.sub
        local.set $l42
        local.get $l17
        local.get $l31
        local.get $l39
        f64x2.add
        v128.store offset=48
        local.get $l17
        local.get $l35
        local.get $l40
        f64x2.add
        v128.store offset=112
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.sub
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.add
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l41
        local.get $l29
        local.get $l48
        f64x2.mul
        f64x2.add
        local.set $l49
        local.get $l42
        local.get $l29
        local.get $l47
        f64x2.mul
        f64x2.sub
        local.set $l50
        local.get $l19
        local.get $l49
        local.get $l23
        f64x2.mul
        local.get $l50
        local.get $l24
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l19
        local.get $l49
        local.get $l24
        f64x2.mul
        local.get $l50
        local.get $l23
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l10
        i32.const 128
        i32.add
        local.set $l10
        local.get $l11
        i32.const 128
        i32.add
        local.set $l11
        local.get $l7
        i32.const 1
        i32.add
        local.tee $l7
        local.get $p3
        i32.ne
        br_if $L1
      end
      local.get $p4
      i32.const 32
      i32.add
      local.set $p4
      local.get $l6
      i32.const 1
      i32.add
      local.tee $l6
      local.get $p2
      i32.ne
      br_if $L0
    end)
  (func $r2 (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 i32) (local $l19 i32) (local $l20 i32) (local $l21 v128) (local $l22 v128) (local $l23 v128) (local $l24 v128) (local $l25 v128) (local $l26 v128) (local $l27 v128) (local $l28 v128) (local $l29 v128) (local $l30 v128) (local $l31 v128) (local $l32 v128) (local $l33 v128) (local $l34 v128) (local $l35 v128) (local $l36 v128) (local $l37 v128) (local $l38 v128) (local $l39 v128) (local $l40 v128) (local $l41 v128) (local $l42 v128) (local $l43 v128) (local $l44 v128) (local $l45 v128) (local $l46 v128) (local $l47 v128) (local $l48 v128) (local $l49 v128) (local $l50 v128)
    local.get $p5
    f64.load
    f64x2.splat
    local.set $l27
    local.get $p5
    f64.load offset=8
    f64x2.splat
    local.set $l28
    local.get $p5
    f64.load offset=16
    f64x2.splat
    local.set $l29
    local.get $p5
    f64.load offset=24
    f64x2.splat
    local.set $l30
    local.get $p3
    local.get $p2
    i32.mul
    i32.const 128
    i32.mul
    local.set $l8
    local.get $p3
    i32.const 128
    i32.mul
    local.set $l9
    i32.const 0
    local.set $l6
    loop $L0
      local.get $p4
      f64.load
      f64x2.splat
      local.set $l21
      local.get $p4
      f64.load offset=8
      f64x2.splat
      local.set $l22
      local.get $p3
      local.get $l6
      i32.mul
      i32.const 128
      i32.mul
      local.set $l12
      local.get $p0
      local.get $l12
      i32.add
      local.set $l10
      local.get $p1
      local.get $l12
      i32.const 2
      i32.mul
      i32.add
      local.set $l11
      i32.const 0
      local.set $l7
      loop $L1
        local.get $l10
        local.set $l13
        local.get $l11
        local.set $l17
        local.get $l13
        local.get $l8
        i32.add
        local.set $l14
        local.get $l17
        local.get $l9
        i32.add
        local.set $l18
        local.get $l13
        v128.load
        local.set $l31
        local.get $l13
        v128.load offset=64
        local.set $l35
        local.get $l14
        v128.load
        local.set $l32
        local.get $l14
        v128.load offset=64
        local.set $l36
        local.get $l17
        local.get $l31
        local.get $l32
        f64x2.add
        v128.store
        local.get $l17
        local.get $l35
        local.get $l36
        f64x2.add
        v128.store offset=64
        local.get $l31
        local.get $l32
        f64x2.sub
        local.set $l49
        local.get $l35
        local.get $l36
        f64x2.sub
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=64
        local.get $l13
        v128.load offset=16
        local.set $l31
        local.get $l13
        v128.load offset=80
        local.set $l35
        local.get $l14
        v128.load offset=16
        local.set $l32
        local.get $l14
        v128.load offset=80
        local.set $l36
        local.get $l17
        local.get $l31
        local.get $l32
        f64x2.add
        v128.store offset=16
        local.get $l17
        local.get $l35
        local.get $l36
        f64x2.add
        v128.store offset=80
        local.get $l31
        local.get $l32
        f64x2.sub
        local.set $l49
        local.get $l35
        local.get $l36
        f64x2.sub
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=16
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=80
        local.get $l13
        v128.load offset=32
        local.set $l31
        local.get $l13
        v128.load offset=96
        local.set $l35
        local.get $l14
        v128.load offset=32
        local.set $l32
        local.get $l14
        v128.load offset=96
        local.set $l36
        local.get $l17
        local.get $l31
        local.get $l32
        f64x2.add
        v128.store offset=32
        local.get $l17
        local.get $l35
        local.get $l36
        f64x2.add
        v128.store offset=96
        local.get $l31
        local.get $l32
        f64x2.sub
        local.set $l49
        local.get $l35
        local.get $l36
        f64x2.sub
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=32
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=96
        local.get $l13
        v128.load offset=48
        local.set $l31
        local.get $l13
        v128.load offset=112
        local.set $l35
        local.get $l14
        v128.load offset=48
        local.set $l32
        local.get $l14
        v128.load offset=112
        local.set $l36
        local.get $l17
        local.get $l31
        local.get $l32
        f64x2.add
        v128.store offset=48
        local.get $l17
        local.get $l35
        local.get $l36
        f64x2.add
        v128.store offset=112
        local.get $l31
        local.get $l32
        f64x2.sub
        local.set $l49
        local.get $l35
        local.get $l36
        f64x2.sub
        local.set $l50
        local.get $l18
        local.get $l49
        local.get $l21
        f64x2.mul
        local.get $l50
        local.get $l22
        f64x2.mul
        f64x2.sub
        v128.store offset=48
        local.get $l18
        local.get $l49
        local.get $l22
        f64x2.mul
        local.get $l50
        local.get $l21
        f64x2.mul
        f64x2.add
        v128.store offset=112
        local.get $l10
        i32.const 128
        i32.add
        local.set $l10
        local.get $l11
        i32.const 128
        i32.add
        local.set $l11
        local.get $l7
        i32.const 1
        i32.add
        local.tee $l7
        local.get $p3
        i32.ne
        br_if $L1
      end
      local.get $p4
      i32.const 16
      i32.add
      local.set $p4
      local.get $l6
      i32.const 1
      i32.add
      local.tee $l6
      local.get $p2
      i32.ne
      br_if $L0
    end)
  (func $mul (type $t0) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32) (param $p5 i32)
    (local $l6 i32) (local $l7 i32) (local $l8 i32) (local $l9 i32) (local $l10 i32) (local $l11 i32) (local $l12 i32) (local $l13 i32) (local $l14 i32) (local $l15 i32) (local $l16 i32) (local $l17 i32) (local $l18 i32) (local $l19 i32) (local $l20 i32) (local $l21 v128) (local $l22 v128) (local $l23 v128) (local $l24 v128) (local $l25 v128) (local $l26 v128) (local $l27 v128) (local $l28 v128) (local $l29 v128) (local $l30 v128) (local $l31 v128) (local $l32 v128) (local $l33 v128) (local $l34 v128) (local $l35 v128) (local $l36 v128) (local $l37 v128) (local $l38 v128) (local $l39 v128) (local $l40 v128) (local $l41 v128) (local $l42 v128) (local $l43 v128) (local $l44 v128) (local $l45 v128) (local $l46 v128) (local $l47 v128) (local $l48 v128) (local $l49 v128) (local $l50 v128)
    i32.const 0
    local.set $l6
    local.get $p0
    local.set $l10
    local.get $p1
    local.set $l11
    loop $L0
      local.get $l11
      v128.load
      local.set $l39
      local.get $l10
      local.get $l10
      v128.load
      local.get $l39
      f64x2.mul
      v128.store
      local.get $l10
      local.get $l10
      v128.load offset=64
      local.get $l39
      f64x2.mul
      v128.store offset=64
      local.get $l11
      v128.load offset=16
      local.set $l39
      local.get $l10
      local.get $l10
      v128.load offset=16
      local.get $l39
      f64x2.mul
      v128.store offset=16
      local.get $l10
      local.get $l10
      v128.load offset=80
      local.get $l39
      f64x2.mul
      v128.store offset=80
      local.get $l11
      v128.load offset=32
      local.set $l39
      local.get $l10
      local.get $l10
      v128.load offset=32
      local.get $l39
      f64x2.mul
      v128.store offset=32
      local.get $l10
      local.get $l10
      v128.load offset=96
      local.get $l39
      f64x2.mul
      v128.store offset=96
      local.get $l11
      v128.load offset=48
      local.set $l39
      local.get $l10
      local.get $l10
      v128.load offset=48
      local.get $l39
      f64x2.mul
      v128.store offset=48
      local.get $l10
      local.get $l10
      v128.load offset=112
      local.get $l39
      f64x2.mul
      v128.store offset=112
      local.get $l10
      i32.const 128
      i32.add
      local.set $l10
      local.get $l11
      i32.const 64
      i32.add
      local.set $l11
      local.get $l6
      i32.const 1
      i32.add
      local.tee $l6
      local.get $p2
      i32.ne
      br_if $L0
    end)
  (export "r4" (func $r4))
  (export "r3" (func $r3))
  (export "r2" (func $r2))
  (export "mul" (func $mul)))
