"""Joules a sample from power samples (tinylab/training/energy.py) and the summary field that holds it."""

import io

import pytest

from tinylab.config import RunConfig
from tinylab.core.events import FIELD_BY_KEY, FIELD_TYPES, Summary, TelemetryEvent, encode, well_typed
from tinylab.training import energy


def test_constant_power_over_two_seconds_of_100_samples_is_6_joules_a_sample():
    samples = [(t, 300.0) for t in range(6)]  # once a second, from before the window to after it
    used = energy.joules(samples, 1.5, 3.5)
    assert used == pytest.approx(600.0)
    assert energy.per_sample([(used, 50)], batch_size=2) == pytest.approx(6.0)  # 50 steps of 2 samples


def test_the_integral_is_cut_at_the_windows_edges():
    # 1000 W outside the window must not count; inside, the straight line between samples
    samples = [(0.0, 1000.0), (1.0, 100.0), (2.0, 300.0), (3.0, 300.0), (4.0, 1000.0)]
    assert energy.joules(samples, 1.0, 3.0) == pytest.approx(200.0 + 300.0)
    # cut mid-segment: 200 W at t=1.5 (halfway from 100 to 300), 650 W at t=3.5 (from 300 to 1000)
    assert energy.joules(samples, 1.5, 3.5) == pytest.approx(0.5 * (200 + 300) / 2 + 300 + 0.5 * (300 + 650) / 2)
    # past the last sample the power is held flat
    assert energy.joules(samples[:4], 2.0, 5.0) == pytest.approx(900.0)
    assert energy.joules(list(reversed(samples)), 1.0, 3.0) == pytest.approx(500.0)  # any order


def test_a_window_with_fewer_than_two_samples_takes_the_mean_of_the_nearest():
    samples = [(0.0, 100.0), (2.0, 300.0), (10.0, 900.0)]
    # one sample inside [1.5, 2.5]: it, the one before and the one after
    assert energy.joules(samples, 1.5, 2.5) == pytest.approx((100 + 300 + 900) / 3 * 1.0)
    # none inside [0.5, 1.0]: the sample before and the one after
    assert energy.joules(samples, 0.5, 1.0) == pytest.approx((100 + 300) / 2 * 0.5)
    # a window after every sample: the last one alone
    assert energy.joules([(0.0, 250.0)], 1.0, 1.2) == pytest.approx(50.0)


def test_no_power_readings_is_no_figure():
    assert energy.joules([], 0.0, 2.0) is None
    assert energy.joules([(1.0, 300.0)], 2.0, 2.0) is None  # no window
    assert energy.per_sample([None], 4) is None
    assert energy.per_sample([], 4) is None
    log = energy.PowerLog()
    log.add(TelemetryEvent(power_w=None))  # a driver that gives no power
    log.begin()
    log.step_end(False)
    assert log.samples == [] and log.timed() is None


def test_ranks_sum_their_energy_or_fall_back_to_rank_0():
    assert energy.per_sample([(600.0, 50), (400.0, 50)], 2) == pytest.approx(1000 / 200)
    assert energy.per_sample([(600.0, 50), None], 2) == pytest.approx(6.0)  # rank 0's alone
    assert energy.per_sample([None, (400.0, 50)], 2) is None


def test_the_power_log_integrates_over_the_timed_steps_only(monkeypatch):
    clock = iter([0.0,  # PowerLog() notes its start
                  0.0,  # begin(): the first step starts
                  1.0,  # warm-up step ends
                  3.0, 5.0,  # two timed steps end
                  ])
    monkeypatch.setattr(energy.time, "monotonic", lambda: next(clock))
    log = energy.PowerLog()
    log.begin()
    log.step_end(True)
    log.step_end(False)
    log.step_end(False)
    log.samples = [(0.0, 1000.0), (1.0, 100.0), (3.0, 100.0), (5.0, 300.0)]  # the warm-up's 1000 W is left out
    used, steps = log.timed()
    assert steps == 2 and used == pytest.approx(2 * 100 + 2 * 200)


def test_every_step_warmed_up_counts_them_all(monkeypatch):
    clock = iter([0.0, 0.0, 1.0, 2.0])
    monkeypatch.setattr(energy.time, "monotonic", lambda: next(clock))
    log = energy.PowerLog()
    log.begin()
    log.step_end(True)
    log.step_end(True)
    log.samples = [(0.0, 50.0), (2.0, 50.0)]
    assert log.timed() == (pytest.approx(100.0), 2)


def test_the_summary_field_is_declared_once_and_round_trips():
    spec = FIELD_BY_KEY["energy_j_per_sample"]
    assert (spec.unit, spec.direction, spec.timed, spec.check) == ("J/sample", -1, True, "energy_j_per_sample")
    assert FIELD_TYPES["summary"]["energy_j_per_sample"] == ((int, float, type(None)), False)
    record = encode(Summary(samples_per_s=10.0, energy_j_per_sample=6.0), now=1.0)
    assert well_typed(record) and record["energy_j_per_sample"] == 6.0
    assert Summary.from_event(record).energy_j_per_sample == 6.0
    assert not well_typed({**record, "energy_j_per_sample": "6 J"})
    assert "  energy         6 J/sample" in Summary(energy_j_per_sample=6.0).lines()
    assert "  energy         not measured (no power readings: CPU run / no NVML or AMD SMI)" in Summary().lines()


def test_a_cpu_run_measures_no_energy_and_says_so(tmp_path):
    from tinylab.training.trainer import run_training

    cfg = RunConfig(version="v1", num_steps=4, warmup_steps=1, hidden_dim=32, num_layers=1, num_heads=2,
                    num_kv_heads=2, seq_len=16, batch_size=2, device="cpu")
    out = io.StringIO()
    summary = run_training(cfg, tmp_path / "run", out=out)
    assert "energy_j_per_sample" in summary and summary["energy_j_per_sample"] is None
    assert "energy         not measured (no power readings" in out.getvalue()
