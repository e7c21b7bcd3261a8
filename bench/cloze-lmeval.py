"""lm-evaluation-harness's side of bench/cloze-throughput.ts: score the cloze requests that the
TypeScript side wrote (a json dataset per task: id, context, options, answer, and the target
delimiter in the task name's file) with lm-eval's Hugging Face backend on SmolLM2-135M-Instruct
(the GGUF dequantized by transformers, float32, saved as a checkpoint first; not timed), with
torch on --threads threads. Prints one JSON line: wall seconds of simple_evaluate, scored
continuation tokens (lm-eval's split), and every option's log-likelihood.

    /work/venv/bin/python bench/cloze-lmeval.py --dir DIR --threads 2 [--batch 8]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "goldens"))
from make_lmeval_goldens import checkpoint  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    spec = json.load(open(os.path.join(a.dir, "tasks.json")))
    inc = os.path.join(a.dir, "yaml")
    os.makedirs(inc, exist_ok=True)
    for t in spec:
        with open(os.path.join(inc, f"{t['name']}.yaml"), "w") as f:
            f.write(
                f"task: {t['name']}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {t['file']}\ntest_split: test\n"
                f"output_type: multiple_choice\ndoc_to_text: \"{{{{context}}}}\"\ndoc_to_choice: \"{{{{options}}}}\"\ndoc_to_target: answer\n"
                f"target_delimiter: {json.dumps(t['delimiter'])}\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n"
            )
    ckpt = os.path.join(a.dir, "ckpt")
    if not os.path.exists(os.path.join(ckpt, "config.json")):
        checkpoint(ckpt)
    lm = HFLM(pretrained=ckpt, dtype="float32", device="cpu", batch_size=a.batch)
    tm = TaskManager(include_path=inc)
    t0 = time.time()
    res = lm_eval.simple_evaluate(model=lm, tasks=[t["name"] for t in spec], task_manager=tm, log_samples=True, num_fewshot=0)
    wall = time.time() - t0
    tokens = 0
    lls = {}
    for t in spec:
        for s in sorted(res["samples"][t["name"]], key=lambda s: s["doc_id"]):
            lls[s["doc"]["id"]] = [float(r[0][0]) for r in s["resps"]]
            for ctx, cont in s["arguments"]:
                tokens += len(lm._encode_pair(ctx, cont)[1])
    print(json.dumps({"wall": wall, "tokens": tokens, "lls": lls, "threads": a.threads, "lm_eval": getattr(lm_eval, "__version__", "?")}))


if __name__ == "__main__":
    main()
