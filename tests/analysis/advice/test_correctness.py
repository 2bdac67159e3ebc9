"""Correctness before speed: a first loss far above ln(vocab), parameters that never train."""

from __future__ import annotations

import math

from tinylab.analysis.advice.correctness import INIT_LOSS_FACTOR, bad_init, untrained_parameters
from tinylab.analysis.advice.model import Facts

from support.advice import config, summary


def test_a_first_loss_over_three_times_ln_vocab_is_a_bad_init():
    limit = INIT_LOSS_FACTOR * math.log(1000)
    assert bad_init(Facts("r", config=config(), summary=summary(initial_loss=limit - 0.01))) is None
    item = bad_init(Facts("r", config=config(fault="missing-init"), summary=summary(initial_loss=60.0)))
    assert item.severity == "error" and "60.00" in item.measured.text and "8.7x ln(1000)" in item.measured.text
    assert item.action.changes == {"fault": None} and "without --fault missing-init" in item.action.text


def test_without_the_fault_the_action_says_what_to_fix_by_hand():
    item = bad_init(Facts("r", config=config(), summary=summary(initial_loss=60.0)))
    assert item.action.changes == {} and "canonical_init" in item.action.text


def test_a_partly_trained_model_is_an_error_naming_the_counts():
    assert untrained_parameters(Facts("r", config=config(), summary=summary())) is None
    item = untrained_parameters(Facts("r", config=config(version="v3", fault="detached-backward"),
                                      summary=summary(params_trained=1, params_total=74)))
    assert item.severity == "error" and "1 of 74" in item.measured.text
    assert item.action.changes == {"fault": None} and item.lesson == "performance-debugging step 4"
