"""Correctness before speed: a first loss far above a uniform guess's, parameters that never train.

Both read the run's summary only, so they hold on any device; a run that breaks them is fast or
slow for the wrong reason, which is why they come first (severity "error").
"""

from __future__ import annotations

import math

from tinylab.analysis.advice.model import Advice, Facts, Impact, Quantity, evidence_of_summary, without_fault
from tinylab.analysis.advice.scope import scope

#: The first loss of a model initialised as the lab's versions are (N(0, 0.02)) sits at ln(vocab),
#: the cross-entropy of a uniform guess; this many times that is a bad init (the
#: performance-debugging scenario's check, step 1; its fault gives about 9x at hidden 64).
INIT_LOSS_FACTOR = 3.0


@scope("the first loss is the same on any device and at any load", needs=("summary",))
def bad_init(f: Facts) -> Advice | None:
    s, vocab = f.summary, f.config.get("vocab_size")
    if s is None or s.initial_loss is None or not isinstance(vocab, int) or vocab < 2:
        return None
    uniform = math.log(vocab)
    if s.initial_loss <= INIT_LOSS_FACTOR * uniform:
        return None
    return Advice(
        rule="bad-init",
        severity="error",
        condition="the loss at step 0 is far above ln(vocab), the loss of a uniform guess: the weights start at "
                  "the wrong scale, so the first steps undo the init instead of learning",
        measured=Quantity(s.initial_loss, "", f"initial loss {s.initial_loss:.2f} = {s.initial_loss / uniform:.1f}x "
                                              f"ln({vocab}) = {uniform:.2f}"),
        threshold=Quantity(INIT_LOSS_FACTOR * uniform, "", f"> {INIT_LOSS_FACTOR:g} x ln(vocab) = "
                                                           f"{INIT_LOSS_FACTOR * uniform:.2f}"),
        impact=Impact(None, "initial_loss", None, f"correctness first: with the init fixed the first loss is about "
                                                  f"{uniform:.2f}; speed measured on this run is not a real run's"),
        action=without_fault(f, "missing-init", "initialise every weight N(0, 0.02), the tied embedding included "
                             "(models/common.py canonical_init)"),
        lesson="performance-debugging step 1",
        evidence=(evidence_of_summary(f, "initial_loss"), f"config.json vocab_size={vocab}"),
    )


@scope("a count of the tensors that changed, the same on any device and at any load", needs=("summary",))
def untrained_parameters(f: Facts) -> Advice | None:
    s = f.summary
    if s is None or not s.partly_trained:
        return None
    frozen = int(s.params_total) - int(s.params_trained)
    return Advice(
        rule="untrained-parameters",
        severity="error",
        condition="some parameter tensors never changed: their gradients never arrived (a kernel launched "
                  "outside autograd, a detached tensor), so the step is fast for the wrong reason",
        measured=Quantity(float(s.params_trained), "tensors", f"{s.params_trained} of {s.params_total} parameter "
                                                              f"tensors trained ({frozen} never changed)"),
        threshold=Quantity(float(s.params_total), "tensors", f"all {s.params_total} tensors train"),
        impact=Impact(None, "params_trained", None, "correctness first: this run's step times and loss do not "
                                                    "measure training; a fixed step is slower and trains every "
                                                    "tensor"),
        action=without_fault(f, "detached-backward", "give every custom kernel a backward (a "
                             "torch.autograd.Function) and call it inside autograd"),
        lesson="performance-debugging step 4",
        evidence=(evidence_of_summary(f, "params_trained", "params_total"),),
    )


RULES = (bad_init, untrained_parameters)
