import pytest

from tinylab.config import GRAPH_WARMUP_ITERS, PRESETS, ConfigError, RunConfig


def test_defaults_are_the_workshop_model():
    cfg = RunConfig().validate()
    assert (cfg.vocab_size, cfg.hidden_dim, cfg.num_layers, cfg.num_heads, cfg.num_kv_heads) == (1000, 512, 8, 8, 4)
    assert cfg.ffn_dim == 4 * 512
    assert (cfg.learning_rate, cfg.weight_decay) == (3e-4, 0.01)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"num_heads": 7}, "--num-heads 7 must divide --hidden-dim 512"),
        ({"num_kv_heads": 3}, "--num-kv-heads 3 must divide --num-heads 8"),
        ({"batch_size": 0}, "--batch-size must be an integer >= 1, got 0"),
        ({"version": "v9"}, "unknown version 'v9'"),
        ({"profilers": ["vtune"]}, "unknown profiler 'vtune'"),
        ({"precision": "fp8"}, "unknown precision 'fp8'"),
        ({"fault": "gremlins"}, "unknown fault 'gremlins'"),
        ({"version": "v1", "sdpa": True}, "--sdpa does not apply to v1"),
        ({"version": "v1", "fault": "detached-backward"}, "applies to v3, v4, not v1"),
        ({"num_steps": 5, "warmup_steps": 5}, "--warmup-steps (5) must be smaller than --num-steps (5)"),
        ({"version": "v3", "hidden_dim": 96, "num_heads": 2, "num_kv_heads": 2}, "head dimension of 16, 32, 64 or 128"),
        ({"profilers": ["ncu", "nsys"]}, "only one external profiler"),
        ({"version": "v4", "cuda_graph": True, "precision": "fp16"}, "not fp16"),
        # what the trainer would fail on after the run folder exists
        ({"learning_rate": float("inf")}, "--learning-rate must be a finite number > 0, got inf"),
        ({"learning_rate": float("nan")}, "--learning-rate must be a finite number > 0, got nan"),
        ({"weight_decay": float("inf")}, "--weight-decay must be a finite number >= 0, got inf"),
        ({"weight_decay": float("nan")}, "--weight-decay must be a finite number >= 0, got nan"),
        ({"norm_eps": 0.0}, "--norm-eps must be a finite number > 0"),
        ({"seed": 2**64}, "--seed must be an integer from 0 to 4294967295"),
        ({"seed": -1}, "--seed must be an integer from 0 to 4294967295"),
        ({"profilers": ["pytorch", "pytorch"]}, "profiler 'pytorch' is asked for twice"),
        ({"profilers": ["deepspeed", "deepspeed"]}, "profiler 'deepspeed' is asked for twice"),
        ({"label": "a\x1b[31mb"}, "--label must be text of at most 200 characters without control characters"),
        ({"label": "x" * 201}, "--label must be text of at most 200 characters"),
        # bidirectional overrides and isolates show text in another order than it is stored
        *[({"label": f"txt.{c}exe"}, "without control characters or direction overrides")
          for c in ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069")],
        # a boolean is no integer, whatever Python says
        ({"warmup_steps": True}, "--warmup-steps must be an integer >= 0, got True"),
        ({"num_steps": True}, "--num-steps must be an integer >= 1, got True"),
        ({"seed": False}, "--seed must be an integer from 0"),
        ({"device": "cuda:x"}, "unknown device 'cuda:x'"),
        # a hand-edited config.json: wrong types are refused, not a TypeError
        ({"version": [1, 2]}, "unknown version [1, 2]"),
        ({"precision": 16}, "unknown precision 16"),
        ({"profilers": [1, 2]}, "unknown profiler 1"),
        ({"learning_rate": "fast"}, "--learning-rate must be a finite number > 0, got 'fast'"),
        ({"tf32": "yes"}, "--tf32 must be true or false"),
        ({"sdpa": 1, "version": "v2"}, "--sdpa must be true, false or unset"),
        ({"fault": ["x"]}, "unknown fault ['x']"),
        # rocprof-compute's kernel filter: names mean the same to 6.x (substring) and 7.x (regex)
        ({"profilers": ["rocprof-compute"], "profile_kernels": ["_attn.*"]},
         "--profile-kernel '_attn.*' is not a kernel name or part of one"),
        ({"profilers": ["rocprof-compute"], "profile_kernels": "_attn"}, "--profile-kernel takes at most 8 kernel names"),
        ({"profilers": ["rocprof-compute"], "profile_kernels": [f"k{i}" for i in range(9)]}, "at most 8 kernel names"),
        ({"profilers": ["rocprofv3"], "profile_kernels": ["_attn_fwd"]},
         "--profile-kernel _attn_fwd narrows rocprof-compute's counters: add --profile rocprof-compute"),
    ],
)
def test_bad_values_get_one_line_errors(kwargs, fragment):
    with pytest.raises(ConfigError) as info:
        RunConfig(**kwargs).validate()
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_toggle_defaults_per_version():
    assert RunConfig(version="v2").toggle("sdpa") is True
    assert RunConfig(version="v1").toggle("sdpa") is False
    assert RunConfig(version="v2", sdpa=False).toggle("sdpa") is False
    assert RunConfig(version="v4").toggle("cuda_graph") is True
    assert RunConfig(version="v4", fault="unsynced-timing").toggle("cuda_graph") is False
    # v4 attends with torch's SDPA in strict fp32 (IEEE Triton dots are slow) and with ours otherwise
    assert RunConfig(version="v4").toggle("sdpa") is True
    assert RunConfig(version="v4", tf32=True).toggle("sdpa") is False
    assert RunConfig(version="v4", precision="bf16").toggle("sdpa") is False
    assert RunConfig(version="v4", precision="bf16", sdpa=True).toggle("sdpa") is True
    resolved = RunConfig(version="v2").resolved()
    assert resolved.qkv_fusion is True and resolved.torch_compile is False and resolved.cuda_graph is False
    # v4's graph default depends on the device the trainer finds, so it stays unset until then
    assert RunConfig(version="v4").resolved().cuda_graph is None


def test_round_trip_and_unknown_keys():
    cfg = RunConfig(version="v2", hidden_dim=64, num_heads=4, profilers=["pytorch"])
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown config key 'colour'"):
        RunConfig.from_dict({"colour": "red"})


def test_the_memory_floor_refuses_a_model_that_cannot_fit():
    cfg = RunConfig(num_layers=100_000_000).validate()
    assert cfg.parameter_count() > 10**12
    with pytest.raises(ConfigError, match=r"needs at least [\d,.]+ GiB .* and this machine has 23.0 GiB"):
        cfg.check_fits(23 * 2**30, "this machine")
    assert RunConfig().check_fits(23 * 2**30, "this machine").num_layers == 8
    assert RunConfig().check_fits(None, "an unknown machine").num_layers == 8  # unknown memory: nothing refused


def test_the_default_parameter_count_matches_the_model():
    """The estimate's parameter count is the model's own (v1's tensors, counted by torch)."""
    from models import build_model

    cfg = RunConfig(hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2)
    assert cfg.parameter_count() == sum(p.numel() for p in build_model(cfg).parameters())


def test_graph_warm_up_is_longer_under_ddp():
    """DDP rebuilds its buckets in its first iterations: a graphed DDP rank warms up for 11 steps."""
    assert RunConfig(version="v4").graph_warmup_iters == GRAPH_WARMUP_ITERS == 3
    assert RunConfig(version="v4", parallel="ddp").graph_warmup_iters == 11


@pytest.mark.parametrize("endpoint", ["127.0.0.1:99999", "--help:1", "node1:0", "-x:29500", "node1", "a b:1"])
def test_a_rendezvous_endpoint_is_a_host_and_a_port(endpoint):
    """torchrun read `--help:1` as its own flag, and 99999 is no port."""
    cfg = RunConfig(parallel="ddp", nproc_per_node=1, nnodes=2, rdzv_endpoint=endpoint)
    with pytest.raises(ConfigError, match="--rdzv-endpoint must be HOST:PORT"):
        cfg.validate()


def test_rendezvous_endpoints_of_names_and_addresses_pass():
    for endpoint in ("node-01.cluster:29500", "10.0.0.7:1", "[fe80::1]:65535"):
        RunConfig(parallel="ddp", nnodes=2, rdzv_endpoint=endpoint).validate()


def test_the_memory_floor_counts_what_grows_with_the_vocabulary_and_the_sequence():
    base = RunConfig(**PRESETS["cpu"])
    assert base.memory_floor_bytes() < 2**30
    long = RunConfig(**{**PRESETS["cpu"], "seq_len": 16384})
    assert long.memory_floor_parts()["attention"] == (2 + 2) * 4 * 4 * 16384**2 * 4  # 64 GiB of fp32 scores
    flash = RunConfig(**{**PRESETS["cpu"], "seq_len": 16384, "version": "v2", "sdpa": True})
    assert flash.memory_floor_parts()["attention"] == 0
    wide = RunConfig(**{**PRESETS["cpu"], "vocab_size": 20_000_000})
    assert wide.memory_floor_parts()["logits"] == 3 * 4 * 64 * 20_000_000 * 4
