"""`tinylab submit`: a run as a Slurm job, its sbatch script written into the run folder and submitted."""

from __future__ import annotations

import sys

from tinylab.commands._common import add_runs_dir, integer, lab_from
from tinylab.commands.runflags import add_run_arguments, config_from_args
from tinylab.config import MAX_PER_NODE, MAX_WORLD, ConfigError, RunConfig
from tinylab.service.runs import SLURM_CONFIG_KEYS, JobRequest, check_size, default_config_path

#: The most memory --node-memory may name (GiB): a node of 8 TiB is far beyond any sold today.
MAX_NODE_GIB = 8192

EPILOG = ("The run store (--runs-dir) must be on a filesystem every node of the job sees at the same path "
          "(the ranks write into it), and so must this Python with tinylab. The job runs on its own: closing this "
          "terminal does not stop it. `tinylab runs` shows it queued, then running; `tinylab follow RUN` streams it, "
          "`tinylab cancel RUN` cancels it with scancel.")


def add_arguments(p) -> None:
    p.epilog = EPILOG
    add_run_arguments(p, with_world=False)
    add_runs_dir(p)
    s = p.add_argument_group("Slurm (these flags win over the --slurm-config file)")
    s.add_argument("--nodes", type=integer(1, MAX_WORLD), default=1, metavar="N",
                   help=f"nodes of the job (1 to {MAX_WORLD}; default 1); torchrun starts on each through srun")
    s.add_argument("--gpus-per-node", type=integer(1, MAX_PER_NODE), default=1, metavar="G",
                   help=f"GPUs asked for on each node, one rank each (1 to {MAX_PER_NODE}; default 1; with --device "
                   "cpu: ranks on each node's CPU, no GPU asked for)")
    s.add_argument("--node-memory", type=integer(1, MAX_NODE_GIB), default=None, metavar="GIB",
                   help=f"memory of each rank's GPU on the job's nodes, or with --device cpu each node's memory, "
                   f"in GiB (1 to {MAX_NODE_GIB}); the model must fit in it (default: this machine's)")
    s.add_argument("--time", default=None, metavar="HH:MM:SS",
                   help="the job's time limit, 1 second to about 8,000 years (default: the config file's, else the "
                   "partition's)")
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
    check_nodes_fit(cfg, args.gpus_per_node, args.node_memory, lab_from(args, launches=True).machine)
    done = lab_from(args, launches=True).submit(cfg, request, dry_run=args.dry_run)
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


def check_nodes_fit(cfg: RunConfig, gpus_per_node: int, node_memory_gib: int | None, machine) -> None:
    """What `train` refuses before launch, refused before a job is queued: a GPU the node will not
    have (Slurm shows the job only its --gpus-per-node GPUs, cuda:0 up), a model that cannot fit.
    The nodes' memory is --node-memory when given, else this machine's: a login node without a GPU
    measures with its host memory, so a GPU node with more needs --node-memory."""
    from tinylab.service.launch import RANK_PROCESS_BYTES

    index = cfg.device.partition(":")[2]
    if index and int(index) >= gpus_per_node:
        raise ConfigError(f"--device {cfg.device}: each node shows the job its {gpus_per_node} GPU(s) "
                          f"(--gpus-per-node), cuda:0 to cuda:{gpus_per_node - 1}; use --device cuda")
    on_cpu = cfg.device == "cpu"
    if node_memory_gib is not None:
        memory, where = node_memory_gib << 30, f"--node-memory {node_memory_gib}"
    else:
        memory = machine.memory_bytes("cuda" if machine.has_gpu and not on_cpu else "cpu")
        where = "this machine (--node-memory names the job's nodes')"
    if on_cpu and memory and gpus_per_node > 1:  # the ranks of a node share its memory
        cfg.check_fits(max(0, memory // gpus_per_node - RANK_PROCESS_BYTES) or 1,
                       f"each of {gpus_per_node} ranks' share of {where}")
    else:
        cfg.check_fits(memory, where)
