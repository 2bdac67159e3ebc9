import subprocess
import sys

import pytest

from tinylab import cli


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=timeout)


def test_help_imports_neither_torch_nor_textual():
    code = (
        "import sys; from tinylab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'textual', 'pandas', 'triton') if m in sys.modules]\n"
        "print('LOADED', bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "LOADED []" in out
    assert "train" in out and "hotspots" in out


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["train", "--preset", "workshop", "--num-heads", "7"], "--num-heads 7 must divide --hidden-dim 512"),
        (["train", "--preset", "cpu", "--num-heads", "7"], "--num-heads 7 must divide --hidden-dim 128"),
        (["train", "--batch-size", "0"], "argument --batch-size: must be an integer from 1 to 1048576, got '0'"),
        (["train", "--version", "v7"], "unknown version 'v7'"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragment, tmp_path):
    res = run_cli(*args, "--runs-dir", str(tmp_path)) if args[0] == "train" else run_cli(*args)
    assert res.returncode == 2
    assert fragment in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir()), "nothing may start before validation passes"


def test_cuda_requested_but_absent(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = run_cli("train", "--device", "cuda", "--runs-dir", str(tmp_path))
    assert res.returncode == 2
    assert "no CUDA/ROCm GPU is visible" in res.stderr
    assert not any(tmp_path.iterdir())


def test_missing_profiler_is_refused_before_launch(tmp_path):
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "tinylab", "train", "--profile", "nsys", "--device", "cpu",
                          "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2
    assert "profiler 'nsys' is not available here" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_options_without_a_command_go_to_the_lab(monkeypatch):

    seen = {}

    def fake_build(command):
        seen["command"] = command
        raise SystemExit(0)

    monkeypatch.setattr(cli, "build_parser", fake_build)
    with pytest.raises(SystemExit):
        cli.main(["--runs-dir", "/tmp/x"])
    assert seen["command"] == "lab"
    with pytest.raises(SystemExit):
        cli.main(["runs", "--runs-dir", "/tmp/x"])
    assert seen["command"] == "runs"


def test_version_takes_no_value(capsys):
    """`tinylab --version v2` printed the version and exited 0: the learner meant `train --version v2`."""
    assert cli.main(["--version", "v2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tinylab: error: --version takes no value, got 'v2'")
    assert "tinylab train --version v2" in err[0]


def test_every_command_has_its_description_beside_its_name(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    for name, (_, help_text) in cli.COMMANDS.items():
        line = next(line for line in lines if line.split()[:1] == [name])
        assert help_text.split()[0] in line, line  # "exercises" had its description on the next line
