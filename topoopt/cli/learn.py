"""``topoopt learn``: train the learned predictors (see ``docs/learn.md``)."""

from __future__ import annotations

import click


@click.group()
def learn() -> None:
    """Train learned models from measurements and traces."""


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
