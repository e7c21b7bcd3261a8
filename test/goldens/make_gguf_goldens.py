"""GGUF goldens for lobes' GGUF reader, writer and GGML dequantization.

The `gguf` Python package (llama.cpp's own GGUF library) is the independent reference:

  1. goldens.gguf: written with gguf.GGUFWriter. Metadata of every value type (all integer
     widths, float32/64, bool, strings with non-ASCII text and an empty one, arrays of every
     item type, nested arrays); one small tensor of every GGML type lobes decodes, made of
     random blocks (random bytes, with the fp16 scale fields set to random finite halves),
     plus one IQ2_XXS tensor that lobes must refuse to dequantize.
  2. goldens.json: what was written (metadata with types, tensor names / types / dims /
     offsets), the gguf package's (block size, type size) table for every GGML type, and for
     each tensor the place of its float32 dequantization in goldens.bin.
  3. goldens.bin: gguf.quants.dequantize(...) of every decodable tensor, float32
     little-endian, concatenated.
  4. smollm2.json (only when ../shared/models/smollm2-135m-instruct is present): what
     gguf.GGUFReader reports for the real SmolLM2-135M-Instruct Q4_1 file: every tensor's name,
     type, dims and absolute offset, the metadata (arrays summarised by length, first and last
     items and a sha256), and the sha256 of the float32 dequantization of four tensors.
  5. writer-check.json: lobes' GGUF writer (test/formats/gguf-probe.ts, run with tsx) copies
     goldens.gguf with alignment 64; GGUFReader must read it back with the same metadata and
     tensor bytes. The file's sha256 is recorded so that the tests can check that lobes still
     writes exactly the file the gguf package accepted.

From the repository root (after `npm ci`):
    /work/venv/bin/python test/goldens/make_gguf_goldens.py
    -> test/goldens/gguf/
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'goldens', 'gguf')
SMOL = os.path.join(ROOT, '..', 'shared', 'models', 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf')
SEED = 20240611

rng = np.random.default_rng(SEED)

# Byte offsets of the fp16 scale fields inside one block of each quantized type.
HALF_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.IQ2_XXS: [0],
}


def finite_halves(n):
    """n random fp16 bit patterns that are finite (zeros and subnormals included)."""
    out = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bad = (out & 0x7C00) == 0x7C00
    while bad.any():
        out[bad] = rng.integers(0, 1 << 16, size=int(bad.sum()), dtype=np.uint32).astype(np.uint16)
        bad = (out & 0x7C00) == 0x7C00
    return out


def random_blocks(qtype, rows, row_len):
    block, tsize = gguf.GGML_QUANT_SIZES[qtype]
    nb = rows * row_len // block
    b = rng.integers(0, 256, size=(nb, tsize), dtype=np.uint8)
    for off in HALF_FIELDS[qtype]:
        b[:, off:off + 2] = finite_halves(nb).view(np.uint8).reshape(nb, 2)
    return b.reshape(rows, row_len // block * tsize)


# (name, type, numpy shape): the last axis is the row length (GGUF dims[0]).
TENSORS = [
    ('f32.vec', Q.F32, (7,)),
    ('f32.mat', Q.F32, (3, 5)),
    ('f16.mat', Q.F16, (5, 3)),
    ('bf16.mat', Q.BF16, (2, 9)),
    ('q4_0.t3', Q.Q4_0, (2, 3, 64)),
    ('q4_1.mat', Q.Q4_1, (3, 64)),
    ('q5_0.mat', Q.Q5_0, (3, 64)),
    ('q5_1.mat', Q.Q5_1, (3, 64)),
    ('q8_0.mat', Q.Q8_0, (3, 64)),
    ('q2_k.mat', Q.Q2_K, (2, 512)),
    ('q3_k.mat', Q.Q3_K, (2, 512)),
    ('q4_k.mat', Q.Q4_K, (2, 512)),
    ('q5_k.mat', Q.Q5_K, (2, 512)),
    ('q6_k.mat', Q.Q6_K, (2, 512)),
    ('iq2_xxs.unsupported', Q.IQ2_XXS, (1, 256)),
]


def tensor_data(qtype, shape):
    if qtype == Q.F32:
        return rng.standard_normal(shape).astype(np.float32), None
    if qtype == Q.F16:
        return finite_halves(int(np.prod(shape))).view(np.float16).reshape(shape), None
    if qtype == Q.BF16:
        bits = rng.integers(0, 1 << 16, size=int(np.prod(shape)), dtype=np.uint32).astype(np.uint16)
        bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF  # no NaN / Inf patterns
        return bits.view(np.uint8).reshape(*shape[:-1], shape[-1] * 2), Q.BF16
    rows = int(np.prod(shape[:-1]))
    b = random_blocks(qtype, rows, shape[-1])
    return b.reshape(*shape[:-1], b.shape[-1]), qtype


# (key, value type, value, array item type); nested arrays let the writer infer inner types.
S = 'héllo, 世界 🙂 \\ "quoted" \t tab'
METADATA = [
    ('test.uint8', V.UINT8, 200, None),
    ('test.int8', V.INT8, -100, None),
    ('test.uint16', V.UINT16, 60000, None),
    ('test.int16', V.INT16, -30000, None),
    ('test.uint32', V.UINT32, 4000000000, None),
    ('test.int32', V.INT32, -2000000000, None),
    ('test.float32', V.FLOAT32, float(np.float32(3.14159)), None),
    ('test.bool.true', V.BOOL, True, None),
    ('test.bool.false', V.BOOL, False, None),
    ('test.string', V.STRING, S, None),
    ('test.string.empty', V.STRING, '', None),
    ('test.uint64', V.UINT64, 2**63 + 12345, None),
    ('test.int64', V.INT64, -(2**62) - 7, None),
    ('test.float64', V.FLOAT64, 2.718281828459045, None),
    ('test.array.uint8', V.ARRAY, [0, 255, 7], V.UINT8),
    ('test.array.int8', V.ARRAY, [-128, 127, 0], V.INT8),
    ('test.array.uint16', V.ARRAY, [65535, 1], V.UINT16),
    ('test.array.int16', V.ARRAY, [-32768, 32767], V.INT16),
    ('test.array.uint32', V.ARRAY, [4294967295, 0, 12], V.UINT32),
    ('test.array.int32', V.ARRAY, [-2147483648, 2147483647, -1], V.INT32),
    ('test.array.float32', V.ARRAY, [float(np.float32(x)) for x in (0.1, -2.5, 1e-30)], V.FLOAT32),
    ('test.array.bool', V.ARRAY, [True, False, True], V.BOOL),
    ('test.array.string', V.ARRAY, ['a', '', S, 'Ġthe'], V.STRING),
    ('test.array.uint64', V.ARRAY, [2**64 - 1, 0], V.UINT64),
    ('test.array.int64', V.ARRAY, [-(2**63), 2**63 - 1], V.INT64),
    ('test.array.float64', V.ARRAY, [1.0 / 3.0, -1e300], V.FLOAT64),
    ('test.array.nested', V.ARRAY, [[1, 2], [3, 4, 5]], V.ARRAY),
    ('test.array.nested.strings', V.ARRAY, [['x', 'yz'], ['世界']], V.ARRAY),
    ('test.array.nested.deep', V.ARRAY, [[[1.5], [2.5, 3.5]]], V.ARRAY),
]

INFERRED = {int: 'int32', float: 'float32', str: 'string', bool: 'bool'}


def json_value(vtype, value, sub=None):
    """A metadata value in the JSON form the tests read: {type, value} with 64-bit integers as strings."""
    t = V(vtype).name.lower()
    if vtype == V.ARRAY:
        return {'type': 'array', 'value': json_array(value, sub)}
    if vtype in (V.UINT64, V.INT64):
        return {'type': t, 'value': str(value)}
    return {'type': t, 'value': value}


def json_array(items, sub):
    if sub is None or sub == V.ARRAY:
        first = items[0]
        if isinstance(first, list):
            return {'itemType': 'array', 'items': [json_array(x, None) for x in items]}
        sub_name = INFERRED[type(first)]
    else:
        sub_name = V(sub).name.lower()
    if sub_name in ('uint64', 'int64'):
        return {'itemType': sub_name, 'items': [str(x) for x in items]}
    return {'itemType': sub_name, 'items': list(items)}


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def flatten(jv):
    """A nested JSON array value as GGUFReader shows it: the chain of types and the leaf items, flattened."""
    chain, items = ['array'], []

    def walk(a, depth):
        if len(chain) <= depth + 1:
            chain.append(a['itemType'])
        if a['itemType'] == 'array':
            for x in a['items']:
                walk(x, depth + 1)
        else:
            items.extend(a['items'])
    walk(jv['value'], 0)
    return {'types': chain, 'items': items}


def field_value(f):
    """A GGUFReader field as the same JSON form; nested arrays as flatten() gives them."""
    t0 = V(f.types[0])
    if t0 == V.ARRAY:
        sub = V(f.types[1])
        if sub == V.ARRAY:
            return {'types': [V(x).name.lower() for x in f.types], 'items': list(f.contents())}
        items = f.contents()
        if sub in (V.UINT64, V.INT64):
            items = [str(int(x)) for x in items]
        return {'type': 'array', 'value': {'itemType': sub.name.lower(), 'items': items}}
    v = f.contents()
    if t0 in (V.UINT64, V.INT64):
        v = str(int(v))
    return {'type': t0.name.lower(), 'value': v}


def make_goldens():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, 'goldens.gguf')
    w = gguf.GGUFWriter(path, 'lobes-test')
    meta = [('general.architecture', json_value(V.STRING, 'lobes-test'))]
    for key, vtype, value, sub in METADATA:
        w.add_key_value(key, value, vtype, sub_type=sub if sub != V.ARRAY else None)
        meta.append((key, json_value(vtype, value, sub)))
    datas = {}
    for name, qtype, shape in TENSORS:
        data, raw = tensor_data(qtype, shape)
        datas[name] = (data, qtype)
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # Read it back with the gguf package: the oracle for offsets and for the metadata.
    r = gguf.GGUFReader(path)
    for key, jv in meta:
        got = field_value(r.fields[key])
        if 'types' in got:
            jv = flatten(jv)
        if got != jv:
            raise SystemExit(f'GGUFReader disagrees on {key}: {got} != {jv}')
    golden_chunks = []
    tensors = []
    pos = 0
    for t in r.tensors:
        data, qtype = datas[t.name]
        raw = np.ascontiguousarray(t.data).view(np.uint8).tobytes()
        assert raw == np.ascontiguousarray(data).view(np.uint8).tobytes(), t.name
        entry = {
            'name': t.name, 'type': t.tensor_type.name, 'typeId': int(t.tensor_type),
            'dims': [int(x) for x in t.shape], 'offset': int(t.data_offset), 'nbytes': int(t.n_bytes),
            'sha256': sha256(raw),
        }
        if qtype != Q.IQ2_XXS:
            deq = gguf.quants.dequantize(np.frombuffer(raw, dtype=np.uint8).reshape(-1, t.n_bytes // max(1, int(np.prod(t.shape[1:])))), qtype)
            deq = np.ascontiguousarray(deq, dtype=np.float32).reshape(-1)
            assert deq.size == int(np.prod(t.shape)), t.name
            entry['golden'] = [pos, int(deq.size)]
            golden_chunks.append(deq.astype('<f4').tobytes())
            pos += int(deq.size)
        tensors.append(entry)
    with open(os.path.join(OUT, 'goldens.bin'), 'wb') as f:
        for c in golden_chunks:
            f.write(c)
    doc = {
        'about': 'written by test/goldens/make_gguf_goldens.py with the gguf package %s; seed %d' % (gguf_version(), SEED),
        'file': 'goldens.gguf', 'version': int(r.fields['GGUF.version'].contents()), 'alignment': int(r.alignment),
        'dataStart': int(r.data_offset), 'metadata': [{'key': k, **v} for k, v in meta], 'tensors': tensors,
        'quantSizes': {q.name: [int(q), *gguf.GGML_QUANT_SIZES[q]] for q in gguf.GGML_QUANT_SIZES},
    }
    with open(os.path.join(OUT, 'goldens.json'), 'w') as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write('\n')
    return doc


def gguf_version():
    from importlib.metadata import version
    return version('gguf')


def array_summary(f):
    sub = V(f.types[1])
    items = f.contents()
    if sub == V.STRING:
        digest = sha256('\n'.join(items).encode('utf-8'))
        head, tail = items[:3], items[-3:]
    else:
        arr = np.array(items, dtype={V.INT32: '<i4', V.FLOAT32: '<f4', V.UINT32: '<u4'}[sub])
        digest = sha256(arr.tobytes())
        head, tail = arr[:3].tolist(), arr[-3:].tolist()
    return {'type': 'array', 'itemType': sub.name.lower(), 'length': len(items), 'head': head, 'tail': tail, 'sha256': digest}


def make_smollm2():
    if not os.path.exists(SMOL):
        print(f'skipping smollm2.json: {SMOL} is absent')
        return
    r = gguf.GGUFReader(SMOL)
    meta = []
    for key, f in r.fields.items():
        if key.startswith('GGUF.'):
            continue
        meta.append({'key': key, **(array_summary(f) if V(f.types[0]) == V.ARRAY else field_value(f))})
    tensors = [{'name': t.name, 'type': t.tensor_type.name, 'dims': [int(x) for x in t.shape],
                'offset': int(t.data_offset), 'nbytes': int(t.n_bytes)} for t in r.tensors]
    hashes = {}
    by_name = {t.name: t for t in r.tensors}
    for name in ('token_embd.weight', 'blk.0.ffn_down.weight', 'blk.29.attn_k.weight', 'output_norm.weight'):
        t = by_name[name]
        deq = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        hashes[name] = {'type': t.tensor_type.name, 'count': int(deq.size), 'sha256': sha256(deq.astype('<f4').tobytes()),
                        'first': [float(x) for x in deq.reshape(-1)[:4]]}
    doc = {
        'about': 'gguf.GGUFReader (gguf %s) on SmolLM2-135M-Instruct.Q4_1.gguf' % gguf_version(),
        'version': int(r.fields['GGUF.version'].contents()), 'alignment': int(r.alignment), 'dataStart': int(r.data_offset),
        'metadata': meta, 'tensors': tensors, 'dequantized': hashes,
    }
    with open(os.path.join(OUT, 'smollm2.json'), 'w') as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write('\n')


def check_writer(doc):
    """lobes' writer copies goldens.gguf with alignment 64; GGUFReader must agree with the original."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'probe.gguf')
        tsx = os.path.join(ROOT, 'node_modules', '.bin', 'tsx')
        subprocess.run([tsx, os.path.join(ROOT, 'test', 'formats', 'gguf-probe.ts'), os.path.join(OUT, 'goldens.gguf'), out], check=True, cwd=ROOT)
        r = gguf.GGUFReader(out)
        assert r.alignment == 64, r.alignment
        assert int(r.fields['GGUF.version'].contents()) == 3
        for m in doc['metadata']:
            got = field_value(r.fields[m['key']])
            want = {'type': m['type'], 'value': m['value']}
            if 'types' in got:
                want = flatten(want)
            if got != want:
                raise SystemExit(f'writer check: {m["key"]}: {got} != {want}')
        assert r.fields['general.alignment'].contents() == 64
        seen = []
        for t, want in zip(r.tensors, doc['tensors']):
            raw = np.ascontiguousarray(t.data).view(np.uint8).tobytes()
            assert t.name == want['name'] and t.tensor_type.name == want['type'], t.name
            assert [int(x) for x in t.shape] == want['dims'], t.name
            assert int(t.data_offset) % 64 == 0, t.name
            assert sha256(raw) == want['sha256'], t.name
            seen.append(t.name)
        assert len(seen) == len(doc['tensors'])
        with open(out, 'rb') as f:
            digest = sha256(f.read())
    res = {'about': 'gguf.GGUFReader read the copy of goldens.gguf made by test/formats/gguf-probe.ts (alignment 64): metadata and tensor bytes equal',
           'sha256': digest, 'tensors': len(seen), 'alignment': 64}
    with open(os.path.join(OUT, 'writer-check.json'), 'w') as f:
        json.dump(res, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    d = make_goldens()
    make_smollm2()
    if '--no-writer-check' not in sys.argv:
        check_writer(d)
    print('wrote', OUT)
