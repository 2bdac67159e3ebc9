"""`tinylab submit`: a run as a Slurm job, its sbatch script written into the run folder and submitted."""

from __future__ import annotations

import sys

from tinylab.commands._common import add_runs_dir, lab_from
from tinylab.commands.runflags import add_run_arguments, config_from_args
from tinylab.service.runs import SLURM_CONFIG_KEYS, JobRequest, check_size, default_config_path

EPILOG = ("The run store (--runs-dir) must be on a filesystem every node of the job sees at the same path "
          "(the ranks write into it), and so must this Python with tinylab. The job runs on its own: closing this "
          "terminal does not stop it. `tinylab runs` shows it queued, then running; `tinylab follow RUN` streams it, "
          "`tinylab cancel RUN` cancels it with scancel.")


def add_arguments(p) -> None:
    p.epilog = EPILOG
    add_run_arguments(p, with_world=False)
    add_runs_dir(p)
    s = p.add_argument_group("Slurm (these flags win over the --slurm-config file)")
    s.add_argument("--nodes", type=int, default=1, metavar="N",
                   help="nodes of the job (default 1); torchrun starts on each through srun")
    s.add_argument("--gpus-per-node", type=int, default=1, metavar="G",
                   help="GPUs asked for on each node, one rank each (default 1; with --device cpu: ranks on "
                   "each node's CPU, no GPU asked for)")
    s.add_argument("--time", default=None, metavar="HH:MM:SS",
                   help="the job's time limit (default: the config file's, else the partition's)")
    s.add_argument("--partition", default=None, metavar="P",
                   help="Slurm partition (default: the config file's, else Slurm's)")
    s.add_argument("--account", default=None, metavar="A",
                   help="Slurm account (default: the config file's, else yours)")
    s.add_argument("--slurm-config", default=None, metavar="FILE",
                   help=f"TOML file of defaults: {', '.join(SLURM_CONFIG_KEYS)} "
                   f"(default {default_config_path()} when it exists)")
    s.add_argument("--dry-run", action="store_true",
                   help="write the run folder and its job script and print the script; submit nothing (needs no Slurm)")


def run(args) -> int:
    check_size(args.nodes, args.gpus_per_node)
    request = JobRequest.from_flags(args.time, args.partition, args.account, args.slurm_config)
    cfg = config_from_args(args, "cpu" if args.device == "cpu" else "cuda", nnodes=args.nodes,
                           nproc_per_node=args.gpus_per_node)
    done = lab_from(args).submit(cfg, request, dry_run=args.dry_run)
    run_id = done.run.id
    if done.job_id is None:
        sys.stdout.write(done.script.read_text(encoding="utf-8"))
        print(f"dry run: wrote {done.script}, not submitted; `sbatch {done.script}` submits it "
              f"(`tinylab rm {run_id}` deletes it)", file=sys.stderr)
        return 0
    unit = "ranks" if cfg.device == "cpu" else "GPUs"
    print(f"run {run_id} submitted as Slurm job {done.job_id} ({args.nodes} x {args.gpus_per_node} {unit})")
    print(f"`tinylab follow {run_id}` streams it; `tinylab runs` shows it queued until Slurm starts it",
          file=sys.stderr)
    return 0
