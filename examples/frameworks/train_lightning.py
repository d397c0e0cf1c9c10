#!/usr/bin/env python3
"""train_lightning.py: a Lightning Trainer script with no step markers, for canary-gate's steps
from the optimizer (ci/gpu-check runs it under the gate; nothing here knows about canary-gate).

A small randomly initialised MLP regressor on random data, trained by Lightning's Trainer for
--max-steps optimizer steps, with no logger, checkpoint or progress bar (no files, no network).
Works with the lightning package or the older pytorch_lightning; exits 2 when neither is there.
"""

import argparse
import sys

try:
    import torch
    from torch import nn
    from torch.nn import functional as F
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
except ImportError as e:
    print("train_lightning: %s" % e, file=sys.stderr)
    sys.exit(2)


class Regressor(pl.LightningModule):
    def __init__(self, width):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, width), nn.GELU(), nn.Linear(width, width),
                                 nn.GELU(), nn.Linear(width, 1))

    def training_step(self, batch, index):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--max-steps", type=int, default=200)
    p.add_argument("--width", type=int, default=512)
    a = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(8192, 64)
    y = x.sum(dim=1, keepdim=True)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64,
                                       shuffle=True)
    trainer = pl.Trainer(max_steps=a.max_steps, accelerator="gpu" if a.device == "cuda" else "cpu",
                         devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(a.width), data)
    print("train_lightning: %d optimizer steps" % a.max_steps)


if __name__ == "__main__":
    main()
