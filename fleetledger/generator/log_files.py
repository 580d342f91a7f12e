"""Job log files of the synthetic fleet, and when each run saved a checkpoint.

Every decision is made here, deterministically from the fleet (each run seeded by
`stable_hex(fleet seed, run_id)`), never in the layout (fleet.py and its builders):

- every Slurm `training` run logs like a Hugging Face Trainer or PyTorch Lightning job (Python
  logging times, `,mmm` milliseconds) and checkpoints every 25–40 min, the first 8–20 min after
  it starts — the two-node `moe-ablation-3` that dies with NODE_FAIL at the XID 79 too;
- the preempted `ppo-sweep-base` logs without a checkpoint in attempt 1 (it never reached its
  save interval) and checkpoints in attempt 2, appended to the same `slurm-<JobIDRaw>.out`
  (`--open-mode=append`), so each attempt's window decides which markers are its own;
- the FAILED `eval-harness` logs and never checkpoints (its whole cost is lost);
- the `tokenize-shard` array tasks write `slurm-%A_%a.out` and save a checkpoint per shard part;
- the `embed-batch-*` pods log through `kubectl logs --timestamps` (RFC3339Nano prefix) and save
  a checkpoint every 15–25 min — the OOMKilled one too.

Files: `sources/<aws|onprem>/logs/slurm-<JobIDRaw>.out` (array tasks `slurm-<A>_<a>.out`) and
`sources/gcp/logs/<namespace>/<pod>.log`. Logs are clean: malformed lines are the reader's unit
tests' business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from fleetledger.generator.model import Fleet, Run, stable_hex

SITE_OF_CLUSTER = {"aws-hpc": "aws", "onprem": "onprem", "gke-ml": "gcp"}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = 1_000_000


@dataclass(frozen=True)
class LogLine:
    t_us: int  # when the line was written, microseconds since the epoch
    text: str  # the line as the application printed it (Slurm) / after kubectl's prefix (K8s)
    marker: bool = False


@dataclass
class JobLog:
    """One log file: the runs (attempts) that wrote to it, in order, and their lines."""

    scheduler: str
    cluster: str
    path: str  # relative to `sources/`
    runs: list[Run] = field(default_factory=list)
    lines: list[LogLine] = field(default_factory=list)


def _rng(run: Run, fleet: Fleet, what: str) -> np.random.Generator:
    return np.random.default_rng(int(stable_hex(fleet.seed, run.run_id, what, n=16), 16))


def _stamp(t_us: int) -> str:
    """Python logging's asctime: `2026-10-02 11:04:05,123`."""
    dt = EPOCH + timedelta(microseconds=t_us)
    return f"{dt:%Y-%m-%d %H:%M:%S},{dt.microsecond // 1000:03d}"


def _rfc3339nano(t_us: int, ns: int) -> str:
    dt = EPOCH + timedelta(microseconds=t_us)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{dt.microsecond:06d}{ns:03d}Z"


def _end(run: Run, fleet: Fleet) -> int:
    return run.end if run.end is not None else fleet.t1


def _times(
    rng: np.random.Generator, a: int, b: int, first: tuple[int, int], every: tuple[int, int]
):
    """Integer-second times in [a, b): the first `first` seconds after a, then every `every`."""
    t = a + int(rng.integers(*first))
    while t < b:
        yield t
        t += int(rng.integers(*every))


def _ms(rng: np.random.Generator, t: int) -> int:
    """A time of whole seconds plus the milliseconds Python logging prints."""
    return t * US + int(rng.integers(0, 1000)) * 1000


def _training_lines(run: Run, fleet: Fleet, checkpoints: bool, resumed: bool = False):
    """A Trainer-like (or Lightning-like, by the run's hash) log of one attempt."""
    rng = _rng(run, fleet, "log")
    a, b = run.start, _end(run, fleet)
    assert a is not None
    lightning = int(stable_hex(fleet.seed, run.run_id, "style"), 16) % 2 == 1
    logger = "lightning.pytorch.callbacks.model_checkpoint" if lightning else "transformers.trainer"
    lines = [
        LogLine(a * US, f"+ srun python train.py --run-name {run.name} --attempt {run.attempt}"),
        LogLine(
            _ms(rng, a + 2),
            f"{_stamp(_ms(rng, a + 2))} - INFO - __main__ - Loading checkpoint shards: 100%|"
            "##########| 4/4",
        ),
    ]
    if resumed:
        t = _ms(rng, a + 5)
        lines.append(
            LogLine(t, f"{_stamp(t)} - INFO - __main__ - No checkpoint found, starting from step 0")
        )
    for t in _times(rng, a, b, (60, 240), (240, 360)):
        step = (t - a) // 2
        loss = 2.9 * np.exp(-(t - a) / 40000) + 0.4 + float(rng.normal(0, 0.02))
        if rng.random() < 0.5:  # the Trainer prints its loss dicts without a time
            lines.append(LogLine(t * US, f"{{'loss': {loss:.4f}, 'step': {step}}}"))
        else:
            tu = _ms(rng, t)
            lines.append(
                LogLine(tu, f"{_stamp(tu)} - INFO - __main__ - step {step} loss {loss:.4f}")
            )
    if checkpoints:
        for e, t in enumerate(_times(rng, a, b, (8 * 60, 20 * 60), (25 * 60, 40 * 60))):
            tu = _ms(rng, t)
            step = (t - a) // 2
            if lightning:
                text = (
                    f"{_stamp(tu)} - INFO - {logger} - Epoch {e}, global step {step}: 'val_loss' "
                    f"reached {0.5 + 1 / (e + 2):.5f} (best {0.5 + 1 / (e + 2):.5f}), saving model "
                    f"to '/checkpoints/{run.name}/epoch={e}-step={step}.ckpt' as top 3"
                )
            else:
                text = (
                    f"{_stamp(tu)} - INFO - {logger} - Saving model checkpoint to "
                    f"/checkpoints/{run.name}/checkpoint-{step}"
                )
            lines.append(LogLine(tu, text, marker=True))
    return lines


def _preempted_line(run: Run) -> LogLine:
    end = run.end
    assert end is not None
    when = (EPOCH + timedelta(seconds=end)).strftime("%Y-%m-%dT%H:%M:%S")
    return LogLine(
        end * US,
        f"slurmstepd: error: *** JOB {run.job_id_raw} ON {run.nodes[0]} CANCELLED AT {when} "
        "DUE TO PREEMPTION ***",
    )


def _eval_lines(run: Run, fleet: Fleet) -> list[LogLine]:
    rng = _rng(run, fleet, "log")
    a, b = run.start, _end(run, fleet)
    assert a is not None
    lines = [LogLine(a * US, f"+ srun python -m eval_harness --tasks all --name {run.name}")]
    for k, t in enumerate(_times(rng, a, b - 40 * 60, (30, 120), (180, 420))):
        tu = _ms(rng, t)
        lines.append(LogLine(tu, f"{_stamp(tu)} - INFO - eval - task {k} accuracy 0.{k:02d}7"))
    tu = (b - 1) * US
    lines += [
        LogLine(tu, "Traceback (most recent call last):"),
        LogLine(tu, "RuntimeError: NCCL communicator was aborted on rank 2"),
    ]
    return lines


def _shard_lines(run: Run, fleet: Fleet) -> list[LogLine]:
    rng = _rng(run, fleet, "log")
    a, b = run.start, _end(run, fleet)
    assert a is not None
    lines = [LogLine(a * US, f"tokenize shard {run.array_task}: starting")]
    for part, t in enumerate(_times(rng, a, b, (5 * 60, 15 * 60), (10 * 60, 20 * 60))):
        tu = _ms(rng, t)
        lines.append(
            LogLine(
                tu,
                f"{_stamp(tu)} INFO tokenize: shard {run.array_task} part {part} done, "
                "checkpoint saved",
                marker=True,
            )
        )
    return lines


def _pod_lines(run: Run, fleet: Fleet) -> list[LogLine]:
    rng = _rng(run, fleet, "log")
    a, b = run.start, _end(run, fleet)
    assert a is not None
    lines = [LogLine(a * US, "INFO embedder: loading model bge-large")]
    for k, t in enumerate(_times(rng, a, b, (30, 90), (120, 300))):
        lines.append(LogLine(t * US + int(rng.integers(0, US)), f"INFO embedder: batch {k} done"))
    for k, t in enumerate(_times(rng, a, b, (10 * 60, 20 * 60), (15 * 60, 25 * 60))):
        lines.append(
            LogLine(
                t * US + int(rng.integers(0, US)),
                f"INFO embedder: Saved checkpoint gs://embeddings/{run.name}/part-{k:04d}",
                marker=True,
            )
        )
    return lines


def plan_logs(fleet: Fleet) -> list[JobLog]:
    """Which runs write which log file, and every line they write (in time order)."""
    logs: dict[str, JobLog] = {}

    def log_of(run: Run, path: str) -> JobLog:
        if path not in logs:
            logs[path] = JobLog(run.scheduler, run.cluster, path)
        return logs[path]

    for run in sorted(fleet.runs, key=lambda r: (r.start or 0, r.run_id)):
        if run.start is None:
            continue
        site = SITE_OF_CLUSTER.get(run.cluster, run.cluster)
        if run.scheduler == "slurm":
            if run.array_job_id is not None:
                name = f"slurm-{run.array_job_id}_{run.array_task}.out"
            else:
                name = f"slurm-{run.job_id_raw}.out"
            path = f"{site}/logs/{name}"
            if run.kind == "training":
                lines = _training_lines(run, fleet, checkpoints=True)
            elif run.name == "ppo-sweep-base":
                lines = _training_lines(
                    run, fleet, checkpoints=run.attempt > 1, resumed=run.attempt > 1
                )
                if run.state == "PREEMPTED":
                    lines.append(_preempted_line(run))
            elif run.name == "eval-harness":
                lines = _eval_lines(run, fleet)
            elif run.name == "tokenize-shard":
                lines = _shard_lines(run, fleet)
            else:
                continue
        elif run.pod_name and run.pod_name.startswith("embed-batch-"):
            path = f"{site}/logs/{run.account}/{run.pod_name}.log"
            lines = _pod_lines(run, fleet)
        else:
            continue
        log = log_of(run, path)
        log.runs.append(run)
        log.lines += sorted(lines, key=lambda ln: ln.t_us)
    return list(logs.values())


def last_checkpoints(logs: list[JobLog], fleet: Fleet) -> dict[str, int]:
    """run_id → its last checkpoint (µs since the epoch): the latest marker of its log file
    inside the run's own [start, end) — a requeued job's file holds every attempt's markers."""
    out: dict[str, int] = {}
    for log in logs:
        markers = [ln.t_us for ln in log.lines if ln.marker]
        for run in log.runs:
            assert run.start is not None
            a, b = run.start * US, _end(run, fleet) * US
            mine = [t for t in markers if a <= t < b]
            if mine:
                out[run.run_id] = max(mine)
    return out


def iso_us(t_us: int) -> str:
    return (EPOCH + timedelta(microseconds=t_us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_logs(logs: list[JobLog], src: Path) -> int:
    """Write every log file under `src`; returns the number of marker lines written. Kubernetes
    lines get kubectl's `--timestamps` prefix (the line's time, in nanoseconds)."""
    markers = 0
    for log in logs:
        path = src / log.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if log.scheduler == "kubernetes":
            rng = np.random.default_rng(int(stable_hex(log.path, "ns", n=16), 16))
            text = [
                f"{_rfc3339nano(ln.t_us, int(rng.integers(0, 1000)))} {ln.text}" for ln in log.lines
            ]
        else:
            text = [ln.text for ln in log.lines]
        path.write_text("\n".join(text) + "\n")
        markers += sum(ln.marker for ln in log.lines)
    return markers
