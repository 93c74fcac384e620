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


def _type_files(pairs: tuple[str, ...], option: str) -> dict[str, list[str]]:
    """``TYPE=FILE`` values of a repeated option, grouped by type."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise TopooptError(f"{option} takes TYPE=FILE, got {pair!r}")
        out.setdefault(name, []).append(path)
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
    OP,Total_GPU_Count,GPU_Mapping_Across_Nodes,data_size(B),Bandwidth(GB/s))."""
    from topoopt.gpuselect.loaders import read_intra_csv
    from topoopt.gpuselect.models import TableModel
    from topoopt.learn.bandwidth import host_gpus, read_measurements, train_bandwidth

    tables = {
        t: [read_intra_csv(p, field=f"--intra {t}={p}") for p in paths]
        for t, paths in _type_files(intra_files, "--intra").items()
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
    for pair in host_counts:
        name, sep, n = pair.partition("=")
        if not sep or not n.isdigit() or int(n) < 1:
            raise TopooptError(f"--hosts takes TYPE=N with N >= 1, got {pair!r}")
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
