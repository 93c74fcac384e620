"""``topoopt learn``: train the learned predictors (see ``docs/learn.md``)."""

from __future__ import annotations

import csv
import json
import os
import time

import click

from topoopt.core.errors import TopooptError


@click.group()
def learn() -> None:
    """Train learned models from measurements and traces."""


def _by_type(pairs: tuple[str, ...], option: str, value: str) -> dict[str, list[str]]:
    """``TYPE=<value>`` values of a repeated option, grouped by type, in order."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        name, sep, given = pair.partition("=")
        if not sep or not name or not given:
            raise TopooptError(f"{option} takes TYPE={value}, got {pair!r}")
        out.setdefault(name, []).append(given)
    return out


@learn.command("bandwidth")
@click.argument("measurements", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--intra",
    "intra_files",
    multiple=True,
    required=True,
    metavar="TYPE=CSV",
    help="A host type's measured intra-host table (nccl-tests, every GPU subset of one host); "
    "repeat for several types, or several tables of one type (averaged).",
)
@click.option(
    "--host-types",
    required=True,
    metavar="TYPE[,TYPE...]",
    help="Host type of the mappings' hosts: one type for all, or one per mapping position.",
)
@click.option("--out", "out_file", required=True, type=click.Path(dir_okay=False))
@click.option(
    "--sample",
    type=click.IntRange(min=2),
    default=None,
    help="Train on N random spanning measurements; score the model on the rest.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--committee",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Bootstrap models trained beside the predictor, for 'topoopt learn suggest'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def bandwidth(
    measurements: tuple[str, ...],
    intra_files: tuple[str, ...],
    host_types: str,
    out_file: str,
    sample: int | None,
    seed: int,
    committee: int,
    as_json: bool,
) -> None:
    """Train BandPilot's bandwidth surrogate from nccl-tests MEASUREMENTS (cross-host CSVs:
    columns OP, Total_GPU_Count, GPU_Mapping_Across_Nodes, data_size(B), Bandwidth(GB/s))."""
    from topoopt.gpuselect.loaders import read_intra_csv
    from topoopt.gpuselect.models import TableModel
    from topoopt.learn.bandwidth import host_gpus, read_measurements, train_bandwidth

    tables = {
        t: [read_intra_csv(p, field=f"--intra {t}={p}") for p in paths]
        for t, paths in _by_type(intra_files, "--intra", "FILE").items()
    }
    intra = TableModel(intra=tables).intra
    types = [t.strip() for t in host_types.split(",")]
    rows = read_measurements(measurements, types, host_gpus(intra))
    start = time.perf_counter()
    training = train_bandwidth(
        rows, intra, sample=sample, seed=seed, committee=committee, sources=measurements
    )
    seconds = time.perf_counter() - start
    training.model.save(out_file)
    summary = {
        "out": out_file,
        "bytes": os.path.getsize(out_file),
        "sha256": training.model.digest,
        "train_s": round(seconds, 3),
        **{k: training.model.training[k] for k in ("rows", "profiles", "single_host_rows")},
        "held_out": None if training.scores is None else training.scores.to_dict(),
    }
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(
        f"trained on {summary['rows']} measurements ({summary['profiles']} count profiles) "
        f"in {seconds:.2f} s; {summary['single_host_rows']} single-host rows left to the "
        f"intra tables"
    )
    if training.scores is not None:
        s = training.scores
        click.echo(
            f"held out {s.rows}: MAPE {s.mape:.2f} %, Spearman {s.spearman:.4f}, R2 {s.r2:.4f}"
        )
    click.echo(f"wrote {out_file} ({summary['bytes']} bytes, sha256 {summary['sha256'][:12]})")


@learn.command("suggest")
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option("--count", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--hosts",
    "host_counts",
    multiple=True,
    metavar="TYPE=N",
    help="Hosts of each type in the cluster to measure (default: the most a training "
    "measurement used).",
)
@click.option(
    "--csv",
    "csv_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the suggestions as a measurement table to fill in (Bandwidth empty).",
)
def suggest(
    model_file: str, count: int, host_counts: tuple[str, ...], csv_file: str | None
) -> None:
    """Propose the next COUNT placements worth measuring: those the model's committee of
    bootstrap models disagrees on most."""
    from topoopt.gpuselect.models.learned import LearnedModel
    from topoopt.learn.bandwidth import suggest as propose

    model = LearnedModel.load(model_file)
    hosts = {}
    for name, given in _by_type(host_counts, "--hosts", "N").items():
        n = given[-1]  # the last one given counts
        if not n.isdigit() or int(n) < 1:
            raise TopooptError(f"--hosts takes TYPE=N with N >= 1, got {name + '=' + n!r}")
        hosts[name] = int(n)
    if not hosts:
        hosts = dict(model.training.get("hosts", {}))
    suggestions = propose(model, count, hosts)
    header = [
        "OP",
        "Total_GPU_Count",
        "GPU_Mapping_Across_Nodes",
        "data_size(B)",
        "Bandwidth(GB/s)",
    ]
    op = model.training.get("op", "")
    size = model.training.get("data_size", "")
    lines = []
    for s in suggestions:
        flags = [[(mask >> i) & 1 for i in range(model.gpus[t])] for t, mask in s.mapping]
        total = sum(c for _, c in s.profile)
        lines.append([op, total, json.dumps(flags), size, ""])
        counts = "+".join(str(c) for _, c in s.profile)
        kinds = ",".join(model.types[t] for t, _ in s.profile)
        click.echo(f"{counts:<16} {kinds:<24} disagreement {s.disagreement:.4f}")
    if csv_file:
        with open(csv_file, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(lines)
        click.echo(f"wrote {csv_file} ({len(lines)} rows to measure)", err=True)
    if not suggestions:
        click.echo("nothing left to suggest: every count profile is measured", err=True)


@learn.command("jct")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "--trace-format",
    "--format",
    "trace_format",
    default=None,
    help="philly, alibaba, helios, jsonl, csv (default: guessed from the file), as in "
    "topoopt simulate.",
)
@click.option(
    "--skip-bad", is_flag=True, help="Leave malformed trace rows out instead of stopping."
)
@click.option(
    "--out", "out_file", required=True, type=click.Path(dir_okay=False), help="Model file (JSON)."
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds per completion-time interval (Arnold: 10 minutes).",
)
@click.option(
    "--max-intervals",
    type=click.IntRange(min=1),
    default=48,
    show_default=True,
    help="The top interval: every job of at least this many intervals falls in it.",
)
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="Share of the jobs held out for the evaluation.",
)
@click.option(
    "--split",
    type=click.Choice(["random", "time"]),
    default="random",
    show_default=True,
    help="Hold out random jobs (Arnold) or the latest ones.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Only the first N jobs (by submit time).",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Most boosting iterations (it stops early on a validation split).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Threads of the boosting (default: every core; 1 is steadier on a loaded machine).",
)
@click.option(
    "--decoder",
    default="auto",
    show_default=True,
    help="How class probabilities become a prediction: expected (interval), argmax, qNN (the "
    "NN % quantile, conservative), or auto: expected or argmax, whichever has the lower "
    "validation RMSE.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the test split's confusion matrix as a PNG (the report extra).",
)
@click.option(
    "--evaluation",
    "evaluation_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the evaluation (figures and confusion matrix) as JSON.",
)
def jct(
    trace: str,
    trace_format: str | None,
    skip_bad: bool,
    out_file: str,
    interval: float,
    max_intervals: int,
    holdout: float,
    split: str,
    seed: int,
    limit: int | None,
    max_iter: int,
    threads: int | None,
    decoder: str,
    plot: str | None,
    evaluation_file: str | None,
) -> None:
    """Train Arnold's JCT predictor on TRACE: a gradient-boosting classifier of the
    completion-time interval from the jobs' metadata (GPUs, nodes, user, queue, QoS, CPUs,
    memory, time of day), evaluated on held-out jobs (RMSE in intervals, accuracy).

    The model file is the simulator's predictor: topoopt simulate --jct-model MODEL.json
    (docs/learn.md).
    """
    import dataclasses
    import json

    from topoopt.core.errors import TopooptError
    from topoopt.learn.jct import plot_confusion, train_jct
    from topoopt.sim.traces import guess_format, read_trace

    fmt = trace_format or guess_format(trace)
    jobs = read_trace(trace, fmt, skip_bad=skip_bad)
    if limit is not None:
        jobs = jobs.head(limit)
    model, evaluation = train_jct(
        jobs.jobs,
        interval_s=interval,
        max_intervals=max_intervals,
        holdout=holdout,
        split=split,
        seed=seed,
        max_iter=max_iter,
        decoder=decoder,
        threads=threads,
    )
    model = dataclasses.replace(
        model, training={"trace": str(trace), "format": fmt, "limit": limit, **model.training}
    )
    model.save(out_file)
    click.echo(f"{len(jobs.jobs)} jobs of {trace} ({fmt}); {evaluation.summary()}")
    if evaluation_file is not None:
        text = json.dumps({"trace": str(trace), **evaluation.to_dict()}, indent=1) + "\n"
        try:
            with open(evaluation_file, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise TopooptError(f"cannot write {evaluation_file}: {exc.strerror}") from None
        click.echo(f"evaluation: {evaluation_file}")
    if plot is not None:
        click.echo(f"confusion matrix: {plot_confusion(evaluation, plot)}")
    click.echo(f"model: {out_file}")
