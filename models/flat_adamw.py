"""The optimizer v4 trains with: AdamW over its flat weight buffer in one kernel.

v4 keeps every GEMM weight as a view of one flat fp32 buffer and every weight gradient as a view
of a second (TinyLlamaV4.flat_weights). One launch of kernels.adamw updates them all, and under
autocast also writes the bf16 copy of the updated weights that the next forward computes with,
so no cast kernel runs. torch's fused AdamW plus that cast took 253.8 + 45.7 us a step at the
default size on an H200, this kernel 228.6 us. The norm weights (17 vectors of 512) are not in
the flat buffer and go through torch's AdamW. The update is torch's AdamW's, with one parameter
group.
"""

from __future__ import annotations

import torch

from kernels.adamw import adamw_step


class FlatAdamW(torch.optim.Optimizer):
    def __init__(self, model, lr: float, weight_decay: float = 1e-2, betas=(0.9, 0.999), eps: float = 1e-8,
                 fused: bool | None = None, capturable: bool = False):
        super().__init__(model.parameters(), dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.model = model
        flat_ids = {id(w) for w in model.flat_weights()[2]}
        rest = [p for p in self.param_groups[0]["params"] if id(p) not in flat_ids]
        self._rest = torch.optim.AdamW(rest, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                       fused=fused, capturable=capturable)
        self._exp_avg: torch.Tensor | None = None
        self._exp_avg_sq: torch.Tensor | None = None
        self._step: torch.Tensor | None = None

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[0]
        flat, flat_grad, weights = self.model.flat_weights()
        for w in weights:
            if w.grad is None:
                raise RuntimeError(f"FlatAdamW: a weight of shape {tuple(w.shape)} has no gradient; "
                                   "every GEMM weight of the model must take part in the loss")
            if w.grad.data_ptr() != w.grad_slot.data_ptr():
                # Autograd made a new tensor (the tied embedding's two gradients summed, or an
                # accumulation): bring it into the flat buffer.
                w.grad_slot.copy_(w.grad)
        if self._exp_avg is None:
            self._exp_avg, self._exp_avg_sq = torch.zeros_like(flat), torch.zeros_like(flat)
            self._step = torch.zeros(1, device=flat.device)
        elif self._exp_avg.device != flat.device:
            self._exp_avg, self._exp_avg_sq, self._step = (t.to(flat.device) for t in (self._exp_avg, self._exp_avg_sq, self._step))
        self._step += 1
        lp = self.model.low_precision_copy()
        adamw_step(flat, flat_grad, self._exp_avg, self._exp_avg_sq, self._step, lr=group["lr"],
                   betas=group["betas"], eps=group["eps"], weight_decay=group["weight_decay"], low_precision_out=lp)
        if lp is not None:
            self.model.low_precision_copy_written()
        self._rest.param_groups[0].update({k: group[k] for k in ("lr", "betas", "eps", "weight_decay")})
        self._rest.step()
        return loss

    def state_dict(self):
        raise NotImplementedError("FlatAdamW keeps its state in flat buffers and does not save it")

    def load_state_dict(self, state_dict):
        raise NotImplementedError("FlatAdamW keeps its state in flat buffers and does not load it")
