"""A tiny model, and the trainer's hook protocol (tinylab/training/trainer.py) around a tiny training loop,
for the in-process profilers' hooks."""

from __future__ import annotations

import torch


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def train(hooks, model, steps: int, forward_end: bool = True) -> None:
    """The trainer's hook protocol (tinylab/training/trainer.py) around a tiny training loop."""
    opt = torch.optim.AdamW(model.parameters())
    for h in hooks:
        h.on_train_start(model, torch.device("cpu"))
    for step in range(steps):
        for h in hooks:
            h.on_step_start(step)
        loss = model(torch.randn(8, 16)).pow(2).mean()
        if forward_end:
            for h in hooks:
                h.on_forward_end(step)
        loss.backward()
        opt.step()
        opt.zero_grad()
        for h in hooks:
            h.on_step_end(step)
