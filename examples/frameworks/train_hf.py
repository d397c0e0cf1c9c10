#!/usr/bin/env python3
"""train_hf.py: a Hugging Face Trainer script with no step markers, for canary-gate's steps from
the optimizer (ci/gpu-check runs it under the gate; nothing here knows about canary-gate).

A tiny GPT-2 built from a config and randomly initialised (no download, no tokenizer), trained
on random token ids with transformers' Trainer for --max-steps optimizer steps. --device cpu
keeps it off the GPU. Needs transformers (and its accelerate); exits 2 when they are missing.
"""

import argparse
import inspect
import sys
import tempfile

try:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
except ImportError as e:
    print("train_hf: %s" % e, file=sys.stderr)
    sys.exit(2)


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, vocab, seq):
        self.vocab, self.seq = vocab, seq

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, self.vocab, (self.seq,), generator=g)
        return {"input_ids": ids, "labels": ids}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--max-steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    a = p.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=a.seq, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    with tempfile.TemporaryDirectory() as out:
        kw = dict(output_dir=out, max_steps=a.max_steps, per_device_train_batch_size=a.batch,
                  learning_rate=1e-3, logging_steps=10 ** 9, save_strategy="no",
                  report_to="none", disable_tqdm=True, dataloader_num_workers=0)
        params = inspect.signature(TrainingArguments).parameters
        if a.device == "cpu":
            kw["use_cpu" if "use_cpu" in params else "no_cuda"] = True
        trainer = Trainer(model=model, args=TrainingArguments(**kw),
                          train_dataset=RandomTokens(256, a.seq))
        trainer.train()
    print("train_hf: %d optimizer steps" % a.max_steps)


if __name__ == "__main__":
    main()
