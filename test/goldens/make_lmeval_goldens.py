"""Goldens of lm-evaluation-harness's multiple-choice scoring, for lobes' cloze scoring.

lm-evaluation-harness (pip install lm_eval; its Hugging Face backend, model type "hf") scores
the 40 hand-written items of test/goldens/lm-eval/items.jsonl with SmolLM2-135M-Instruct
(../shared/models/smollm2-135m-instruct, the Q4_1 GGUF that transformers dequantizes to
float32, saved as a plain checkpoint first), offline, from a local json dataset and task
YAMLs that include_path points to. Two tasks:

  lobes_parity        doc_to_text "Question: {{question}}\\nAnswer:", target delimiter " ",
                      metrics acc, acc_norm, acc_bytes, acc_mutual_info
  lobes_parity_space  doc_to_text "Question: {{question}}\\nAnswer: " (trailing space, which
                      lm-eval moves into the continuation), target delimiter "", acc, acc_norm

Recorded per item and option: lm-eval's context string and continuation, its log-likelihood
and greedy flag (the logged samples' resps), the context-free log-likelihood (acc_mutual_info
requests), the token ids of lm-eval's split (HFLM._encode_pair), and per item lm-eval's
acc, acc_norm, acc_bytes, acc_mutual_info. Also a few Clopper-Pearson intervals from
statsmodels (proportion_confint, method "beta") for the summary's exact CIs.

Run from the repository root:
    /work/venv/bin/pip install lm_eval
    /work/venv/bin/python test/goldens/make_lmeval_goldens.py
Output (committed): test/goldens/lm-eval/goldens.json.
"""
import json
import os
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "test", "goldens", "lm-eval")
GGUF_DIR = os.path.join(ROOT, "..", "shared", "models", "smollm2-135m-instruct")
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

TASKS = {
    "lobes_parity": {
        "doc_to_text": "Question: {{question}}\nAnswer:",
        "target_delimiter": " ",
        "metrics": ["acc", "acc_norm", "acc_bytes", "acc_mutual_info"],
        "lobes_template": "Question: {question}\nAnswer:",
    },
    "lobes_parity_space": {
        "doc_to_text": "Question: {{question}}\nAnswer: ",
        "target_delimiter": "",
        "metrics": ["acc", "acc_norm", "acc_bytes"],
        "lobes_template": "Question: {question}\nAnswer: ",
    },
}


def checkpoint(out_dir):
    """SmolLM2 from the GGUF as a plain float32 transformers checkpoint."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(GGUF_DIR, gguf_file=GGUF, torch_dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)


def task_yaml(name, spec, data_file):
    metrics = "\n".join(f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true" for m in spec["metrics"])
    text = json.dumps(spec["doc_to_text"])
    return f"""task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data_file}
test_split: test
output_type: multiple_choice
doc_to_text: {text}
doc_to_choice: "{{{{options}}}}"
doc_to_target: answer
target_delimiter: {json.dumps(spec["target_delimiter"])}
metric_list:
{metrics}
"""


def main():
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    torch.manual_seed(0)
    threads = int(os.environ.get("THREADS", "2"))
    torch.set_num_threads(threads)
    items = [json.loads(l) for l in open(os.path.join(HERE, "items.jsonl"), encoding="utf-8")]
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "smollm2")
        checkpoint(ckpt)
        inc = os.path.join(tmp, "tasks")
        os.makedirs(inc)
        for name, spec in TASKS.items():
            with open(os.path.join(inc, f"{name}.yaml"), "w") as f:
                f.write(task_yaml(name, spec, os.path.join(HERE, "items.jsonl")))
        lm = HFLM(pretrained=ckpt, dtype="float32", device="cpu", batch_size=8)
        tm = TaskManager(include_path=inc)
        t0 = time.time()
        res = lm_eval.simple_evaluate(model=lm, tasks=list(TASKS), task_manager=tm, log_samples=True, num_fewshot=0)
        wall = time.time() - t0
        out = {
            "lm_eval": lm_eval.__version__ if hasattr(lm_eval, "__version__") else "unknown",
            "model": f"{GGUF} via transformers (float32)",
            "threads": threads,
            "tasks": {},
        }
        for name, spec in TASKS.items():
            samples = sorted(res["samples"][name], key=lambda s: s["doc_id"])
            docs = []
            for s in samples:
                doc = s["doc"]
                n = len(doc["options"])
                args = [a for a in s["arguments"]]
                resps = [r[0] for r in s["resps"]]
                opts = []
                for j in range(n):
                    ctx, cont = args[j][0], args[j][1]
                    ctx_ids, cont_ids = lm._encode_pair(ctx, cont)
                    o = {"continuation": cont, "ll": float(resps[j][0]), "greedy": bool(resps[j][1]), "context_ids": ctx_ids, "ids": cont_ids}
                    if len(resps) == 2 * n:
                        o["unconditional"] = float(resps[n + j][0])
                        assert args[n + j][0] == ""
                    opts.append(o)
                docs.append({
                    "id": doc["id"],
                    "context": args[0][0],
                    "answer": doc["answer"],
                    "options": opts,
                    **{m: float(s[m]) for m in spec["metrics"]},
                })
            out["tasks"][name] = {
                "template": spec["lobes_template"],
                "target_delimiter": spec["target_delimiter"],
                "metrics": {m: res["results"][name][f"{m},none"] for m in spec["metrics"]},
                "docs": docs,
            }
        out["wall_s"] = wall
    from statsmodels.stats.proportion import proportion_confint

    out["clopper_pearson"] = [{"k": k, "n": n, "ci": list(proportion_confint(k, n, alpha=0.05, method="beta"))} for k, n in [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1), (250, 633), (632, 633)]]
    with open(os.path.join(HERE, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {os.path.join(HERE, 'goldens.json')}: " + ", ".join(f"{k}: {v['metrics']}" for k, v in out["tasks"].items()))


if __name__ == "__main__":
    sys.exit(main())
