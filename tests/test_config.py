import re

import pytest

from tinylab.config import ConfigError, RunConfig
from tinylab.core.window import GRAPH_WARMUP_ITERS
from tinylab.config.build import PRESETS


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
        ({"batch_size": 0}, "--batch-size must be an integer from 1 to 1048576, got 0"),
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
        ({"learning_rate": float("inf")}, "--learning-rate must be a finite number > 0 and <= 10, got inf"),
        ({"learning_rate": float("nan")}, "--learning-rate must be a finite number > 0 and <= 10, got nan"),
        ({"weight_decay": float("inf")}, "--weight-decay must be a finite number >= 0 and <= 10, got inf"),
        ({"weight_decay": float("nan")}, "--weight-decay must be a finite number >= 0 and <= 10, got nan"),
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
        ({"warmup_steps": True}, "--warmup-steps must be an integer from 0 to 9999999, got True"),
        ({"num_steps": True}, "--num-steps must be an integer from 1 to 10000000, got True"),
        ({"seed": False}, "--seed must be an integer from 0"),
        ({"device": "cuda:x"}, "unknown device 'cuda:x'"),
        # a hand-edited config.json: wrong types are refused, not a TypeError
        ({"version": [1, 2]}, "unknown version [1, 2]"),
        ({"precision": 16}, "unknown precision 16"),
        ({"profilers": [1, 2]}, "unknown profiler 1"),
        ({"learning_rate": "fast"}, "--learning-rate must be a finite number > 0 and <= 10, got 'fast'"),
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
        ({"profilers": ["rocprof-compute"], "profile_set": "roof line"}, "--profile-set 'roof line' is not a metric set name"),
        ({"profilers": ["rocprofv3"], "profile_set": "launch_stats"},
         "--profile-set launch_stats is a rocprof-compute metric set: add --profile rocprof-compute"),
        # proton's tracing backend takes the vendor's one tracing interface (CUPTI: measured on an H100,
        # tests/gpu/proton_check.py's probe: cuptiSubscribe failed with error 39 beside the PyTorch profiler)
        *[({"profilers": ["proton", tool]}, f"--profile proton and --profile {tool} would both trace the GPU's kernels")
          for tool in ("pytorch", "rocprofv3", "rocprof-sys", "rocprof-compute", "ncu", "nsys")],
        ({"profilers": ["proton"], "proton_backend": "cupti"}, "unknown proton backend 'cupti': choose one of auto, "
                                                                "instrumentation"),
        ({"proton_backend": "instrumentation"}, "--proton-backend instrumentation says how proton measures: add "
                                                "--profile proton"),
        ({"version": "v4", "cuda_graph": True, "profilers": ["proton"], "proton_backend": "instrumentation"},
         "proton's instrumentation reads each launch's record when Triton's launcher returns"),
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
    cfg = RunConfig(num_layers=1024, hidden_dim=16384, num_heads=128, num_kv_heads=128).validate()
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


# ----------------------------------------------------------------------------- what a profiler records
def test_every_profiler_setting_is_a_config_field_with_its_tool_and_variable():
    from tinylab.config import ENV_DEFAULTS, PROFILER_SETTINGS, PROFILERS

    assert set(ENV_DEFAULTS) == set(PROFILER_SETTINGS) <= {f for f in RunConfig.__dataclass_fields__}
    assert set(PROFILER_SETTINGS.values()) <= set(PROFILERS)
    assert all(var.startswith("TINYLAB_") for var in ENV_DEFAULTS.values())


def test_the_rocprofv3_names_match_what_its_releases_and_adapter_know():
    from tinylab.core import rocm_releases as rr
    from tinylab.profilers.rocprofv3 import EXTRA_TRACES, Rocprofv3Adapter

    allowed = {s.name: s.choices for s in Rocprofv3Adapter.settings}
    assert set(allowed["rocprofv3_formats"]) == {f for facts in rr.ROCPROFV3.values() for f in facts.formats}
    assert set(allowed["rocprofv3_traces"]) == set(EXTRA_TRACES)


def test_a_profiler_setting_needs_its_profiler():
    with pytest.raises(ConfigError, match="--profile-memory is a setting of pytorch: add --profile pytorch"):
        RunConfig(profile_memory=True).validate()
    with pytest.raises(ConfigError, match="--rocprofv3-pmc is a setting of rocprofv3: add --profile rocprofv3"):
        RunConfig(rocprofv3_pmc=["SQ_WAVES"]).validate()
    assert RunConfig(profilers=["rocprofv3"], rocprofv3_pmc=["SQ_WAVES GRBM_COUNT", "TCC_HIT[0]"]).validate()


@pytest.mark.parametrize("field,value,message", [
    ("rocprofv3_pmc", ["SQ WAVES!"], "--rocprofv3-pmc 'SQ WAVES!': a group of counter names"),
    ("rocprofv3_pmc", [""], "--rocprofv3-pmc '': a group of counter names"),
    ("rocprof_compute_dispatch", ["20-40"], "--rocprof-compute-dispatch '20-40': a dispatch id or a range"),
    ("rocprofv3_traces", "hip", "--rocprofv3-traces takes at most"),
    ("profile_memory", "yes", "--profile-memory must be true or false"),
    ("ncu_launch_count", True, "--ncu-launch-count must be an integer"),
])
def test_bad_profiler_settings_are_one_line_errors(field, value, message):
    from tinylab.config import PROFILER_SETTINGS

    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        RunConfig(profilers=[PROFILER_SETTINGS[field]], **{field: value}).validate()
    assert "\n" not in str(err.value)


def test_environment_variables_default_the_settings_of_the_profilers_in_use():
    from tinylab.config import env_defaults

    env = {"TINYLAB_PROFILE_MEMORY": "on", "TINYLAB_NCU_LAUNCH_COUNT": "50", "TINYLAB_ROCPROFV3_TRACE": "hip, memory-copy",
           "TINYLAB_ROCPROFV3_PMC": "SQ_WAVES GRBM_COUNT;TCC_HIT", "TINYLAB_ROCPROF_COMPUTE_MODE": "counters",
           "TINYLAB_ROCPROF_COMPUTE_DISPATCH": "20:40,55"}
    assert env_defaults(["pytorch", "rocprofv3"], env) == {
        "profile_memory": True, "rocprofv3_traces": ["hip", "memory-copy"], "rocprofv3_pmc": ["SQ_WAVES GRBM_COUNT", "TCC_HIT"]}
    assert env_defaults(["ncu"], env) == {"ncu_launch_count": 50}
    assert env_defaults(["rocprof-compute"], env) == {"rocprof_compute_mode": "counters",
                                                      "rocprof_compute_dispatch": ["20:40", "55"]}
    assert env_defaults([], env) == {}  # a variable for a tool the run does not use changes nothing
    with pytest.raises(ConfigError, match="TINYLAB_NCU_LAUNCH_COUNT must be an integer, got 'lots'"):
        env_defaults(["ncu"], {"TINYLAB_NCU_LAUNCH_COUNT": "lots"})
    with pytest.raises(ConfigError, match="TINYLAB_PROFILE_MEMORY must be 1 or 0"):
        env_defaults(["pytorch"], {"TINYLAB_PROFILE_MEMORY": "maybe"})


def test_a_run_folder_config_reads_as_a_typed_view():
    cfg = RunConfig(version="v2", profilers=["pytorch"]).resolved().to_dict()
    assert RunConfig.read(cfg) == RunConfig.from_dict(cfg)
    older = {k: v for k, v in cfg.items() if k not in ("profile_memory", "ncu_launch_count")}
    assert RunConfig.read(older) == RunConfig.from_dict(cfg)  # a run from before a setting: its default
    assert RunConfig.read({**cfg, "from_the_future": 1}) is None
    assert RunConfig.read({**cfg, "batch_size": "8"}) is None
    assert RunConfig.read([1, 2]) is None
def test_proton_beside_other_tools():
    """The instrumentation traces nothing, so it may run beside a tracing tool (rocprofv3 included);
    DeepSpeed's FLOPS profiler hooks modules and traces nothing either."""
    RunConfig(profilers=["proton", "deepspeed"]).validate()
    RunConfig(profilers=["proton", "rocprofv3"], proton_backend="instrumentation").validate()
    RunConfig(profilers=["proton", "pytorch"], proton_backend="instrumentation").validate()
    # under the instrumentation v4's default graph gives way, as under DeepSpeed
    assert RunConfig(version="v4", profilers=["proton"], proton_backend="instrumentation").toggle("cuda_graph") is False
    assert RunConfig(version="v4", profilers=["proton"]).toggle("cuda_graph") is True
    assert RunConfig.from_dict({"version": "v3"}).proton_backend == "auto"  # an older config.json
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


def test_from_choices_is_the_one_builder_of_what_a_person_chose():
    """Flags, the Lab's form and exercise presets all build through from_choices: the preset's
    sizes under what was set, a chosen profiler's TINYLAB_* variable under its flag, several
    processes under ddp unless an engine was named, and an unknown key refused."""
    from tinylab.config.build import from_choices

    cfg = from_choices({"hidden_dim": 256, "profilers": ["ncu"]}, preset="cpu",
                       environ={"TINYLAB_NCU_LAUNCH_COUNT": "7", "TINYLAB_PROFILE_MEMORY": "1"})
    assert (cfg.hidden_dim, cfg.num_layers, cfg.batch_size) == (256, PRESETS["cpu"]["num_layers"], PRESETS["cpu"]["batch_size"])
    assert cfg.ncu_launch_count == 7 and cfg.profile_memory is False  # pytorch's variable: not its run
    assert from_choices({"profilers": ["ncu"], "ncu_launch_count": 3},
                        environ={"TINYLAB_NCU_LAUNCH_COUNT": "7"}).ncu_launch_count == 3  # the flag wins
    assert from_choices({"nproc_per_node": 2}, environ={}).parallel == "ddp"
    assert from_choices({"nproc_per_node": 2, "parallel": "fsdp"}, environ={}).parallel == "fsdp"
    assert from_choices({}, environ={}).parallel is None and from_choices({}, environ={}).hidden_dim == RunConfig().hidden_dim
    with pytest.raises(ConfigError, match="unknown config key 'hiden_dim'"):
        from_choices({"hiden_dim": 3}, environ={})
