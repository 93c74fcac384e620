"""BandPilot's surrogate protocol (§5.2, §5.3) on the real 4x8 H100 table, with topoopt's learner.

For N = 25, 50, 100, 250 training measurements (several seeds), drawn at random from the
494-row cross-host table ``../shared/data/cluster/H100_4x8_allreduce_2GiB.csv`` (intra-host:
the two measured H100 hosts' tables, averaged):

* **accuracy** of the learned inter-host term on the held-out rows: MAPE, Spearman, R²;
  the same for other tree ensembles (random forest, scikit-learn's classic gradient boosting,
  LightGBM when installed) to justify the default;
* **dispatch quality**: mean GBE over k = 2..31 with 10 availability scenarios each
  (:func:`topoopt.gpuselect.generate.draw_availability`) of ``gpuselect/eha``, ``hybrid`` and
  ``mip`` searching the learned model, against the true table (a
  :class:`~topoopt.gpuselect.models.TableModel` of every measurement: intra tables and the
  complete cross table); GBE = B(S) / B(S*) with both from the true table (eq. 4);
* **suggestions**: GBE and MAPE against N when the measurements are chosen at random and when
  25 random ones are followed by rounds of 25 ``topoopt learn suggest`` proposals;
* **time**: training per N, the trees' time per count profile, and ``gpuselect/hybrid`` /
  ``eha`` on H100 pools of 64 to 1,024 GPUs under the learned model (cold and warm) and under
  the bottleneck model of the same hosts (the reference, 50 GB/s fabric).

Usage (from the repository root; about 10 minutes on 2 cores)::

    python benchmarks/learn/bandwidth.py --out benchmarks/learn/results

Writes ``bandwidth.md`` (the tables) and ``bandwidth.json`` (every number) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

import topoopt
from topoopt.gpuselect.generate import CLUSTERS, draw_availability, scenario_hosts
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.loaders import read_cross_csv, read_intra_csv
from topoopt.gpuselect.models import BottleneckModel, TableModel
from topoopt.gpuselect.models.learned import LearnedModel, ProfileFeatures
from topoopt.gpuselect.solution import evaluate
from topoopt.learn.bandwidth import (
    Measurement,
    host_gpus,
    read_measurements,
    suggest,
    train_bandwidth,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
CROSS = DATA / "cluster" / "H100_4x8_allreduce_2GiB.csv"
SIZES = (25, 50, 100, 250)
SOLVERS = ("gpuselect/eha", "gpuselect/hybrid", "gpuselect/mip")
KS = range(2, 32)
SCENARIOS = 10


def setting() -> tuple[dict, TableModel, list[Measurement]]:
    """The intra tables, the true model and the measurements."""
    tables = [read_intra_csv(p) for p in sorted(DATA.glob("hosts/H100_node*_allreduce_16MiB.csv"))]
    intra = TableModel(intra={"H100": tables}).intra
    truth = TableModel(intra=intra, cross=read_cross_csv(CROSS))
    rows = read_measurements([str(CROSS)], ["H100"], host_gpus(intra))
    return intra, truth, rows


def scenarios(seed: int) -> list[tuple[int, tuple[Host, ...]]]:
    """The availability scenarios: 10 per k (BandPilot's 50, fewer to bound the run)."""
    out = []
    for k in KS:
        for s in range(SCENARIOS):
            idle = draw_availability(np.random.default_rng([seed, k, s]), 32, k)
            out.append((k, scenario_hosts(CLUSTERS["h100"], idle)))
    return out


def dispatch(model: object, truth: TableModel, seed: int, solvers=SOLVERS) -> dict[str, float]:
    """Mean GBE of each solver searching ``model``, scored on ``truth``."""
    gbe: dict[str, list[float]] = {s: [] for s in solvers}
    for k, hosts in scenarios(seed):
        true_instance = GpuSelectInstance(name="truth", hosts=hosts, k=k, bandwidth=truth)
        best = topoopt.solve(true_instance, "gpuselect/enumerate").objective
        learned = true_instance.with_bandwidth(model)
        for solver in solvers:
            chosen = topoopt.solve(learned, solver).solution
            gbe[solver].append(1.0 if not best else evaluate(true_instance, chosen) / best)
    return {s: float(np.mean(v)) for s, v in gbe.items()}


def accuracy(model: LearnedModel, held_out: list[Measurement]) -> dict[str, float]:
    truth = np.array([m.gbps for m in held_out])
    profiles = [
        tuple((0, c) for c in sorted((c for c in m.counts if c), reverse=True)) for m in held_out
    ]
    pred = model.predict_profiles(profiles)
    return {
        "mape": float(np.mean(np.abs(pred - truth) / truth) * 100),
        "spearman": float(spearmanr(pred, truth).statistic),
        "r2": float(1 - np.sum((pred - truth) ** 2) / np.sum((truth - truth.mean()) ** 2)),
    }


def protocol_run(task: tuple[int, int]) -> dict:
    """One (N, seed): train, score the held-out rows, dispatch."""
    n, seed = task
    intra, truth, rows = setting()
    start = time.perf_counter()
    training = train_bandwidth(rows, intra, sample=n, seed=seed, committee=0)
    train_s = time.perf_counter() - start
    return {
        "n": n,
        "seed": seed,
        "train_s": train_s,
        **accuracy(training.model, list(training.held_out)),
        "gbe": dispatch(training.model, truth, seed),
    }


def learners_run(task: tuple[int, int]) -> list[dict]:
    """Other tree ensembles on the same features, rows and held-out rows."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    n, seed = task
    intra, _, rows = setting()
    training = train_bandwidth(rows, intra, sample=n, seed=seed, committee=0)
    features = ProfileFeatures(("H100",), (8,))

    def matrix(ms: list[Measurement]) -> np.ndarray:
        return features.rows(
            [tuple((0, c) for c in sorted((c for c in m.counts if c), reverse=True)) for m in ms]
        )

    x, y = matrix(list(training.trained)), np.log([m.gbps for m in training.trained])
    xt, yt = matrix(list(training.held_out)), np.array([m.gbps for m in training.held_out])
    leaf = int(min(20, max(2, n // 25)))
    candidates = {
        "random forest": RandomForestRegressor(n_estimators=200, random_state=seed),
        "sklearn GradientBoosting": GradientBoostingRegressor(
            n_estimators=100, learning_rate=0.2, max_depth=3, min_samples_leaf=leaf
        ),
    }
    try:
        import lightgbm

        candidates["LightGBM"] = lightgbm.LGBMRegressor(
            n_estimators=100,
            learning_rate=0.2,
            num_leaves=8,
            max_depth=4,
            min_child_samples=leaf,
            verbose=-1,
        )
    except ImportError:
        pass
    out = [
        {
            "learner": "HistGradientBoosting (topoopt)",
            "n": n,
            "seed": seed,
            **accuracy(training.model, list(training.held_out)),
        }
    ]
    for name, estimator in candidates.items():
        pred = np.exp(estimator.fit(x, y).predict(xt))
        out.append(
            {
                "learner": name,
                "n": n,
                "seed": seed,
                "mape": float(np.mean(np.abs(pred - yt) / yt) * 100),
                "spearman": float(spearmanr(pred, yt).statistic),
                "r2": float(1 - np.sum((pred - yt) ** 2) / np.sum((yt - yt.mean()) ** 2)),
            }
        )
    return out


def suggestion_run(seed: int) -> list[dict]:
    """GBE (hybrid) and MAPE against N: random rows vs 25 random then rounds of suggestions."""
    intra, truth, rows = setting()
    spanning = [m for m in rows if m.spanning]
    by_profile = {tuple(sorted((c for c in m.counts if c), reverse=True)): m for m in spanning}
    out = []
    rng = np.random.default_rng(seed)
    chosen = [spanning[i] for i in rng.permutation(len(spanning))[:25]]
    for n in SIZES:
        random_training = train_bandwidth(rows, intra, sample=n, seed=seed, committee=0)
        while len(chosen) < n:
            model = train_bandwidth(chosen, intra, seed=seed).model
            for s in suggest(model, n - len(chosen) if n - len(chosen) < 25 else 25, {"H100": 4}):
                chosen.append(by_profile[tuple(c for _, c in s.profile)])
        suggested = train_bandwidth(chosen, intra, seed=seed, committee=0).model
        rest = [m for m in spanning if m not in set(chosen)]
        for name, model, held in (
            ("random", random_training.model, list(random_training.held_out)),
            ("suggested", suggested, rest),
        ):
            out.append(
                {
                    "n": n,
                    "seed": seed,
                    "sampling": name,
                    **accuracy(model, held),
                    "gbe_hybrid": dispatch(model, truth, seed, ("gpuselect/hybrid",))[
                        "gpuselect/hybrid"
                    ],
                }
            )
    return out


def timing() -> dict:
    """Training and prediction time, and searches on large H100 pools."""
    intra, _, rows = setting()
    model = train_bandwidth(rows, intra, sample=250, seed=0).model
    rng = np.random.default_rng(0)
    profiles = [
        tuple(
            (0, int(c)) for c in sorted(rng.integers(1, 9, size=rng.integers(2, 65)), reverse=True)
        )
        for _ in range(10_000)
    ]
    out: dict = {"predict": {}}
    rows = ProfileFeatures(("H100",), (8,)).rows(profiles)
    for batch in (1, 10, 100, 10_000):
        reps = max(1, 2_000 // batch)
        start = time.perf_counter()
        for r in range(reps):
            model.predictor.predict(rows[r % 10 : r % 10 + batch])
        out["predict"][batch] = (time.perf_counter() - start) / reps / batch * 1e6
    reference = BottleneckModel(intra=intra, inter_gbps=50.0)
    pools = []
    for gpus in (64, 256, 1024):
        hosts = [
            Host(f"n{j}", "H100", 8, tuple(i for i in range(8) if rng.random() >= 0.3))
            for j in range(gpus // 8)
        ]
        for k in (8, 32, 128):
            if k > 0.6 * gpus:
                continue
            for solver in ("gpuselect/eha", "gpuselect/hybrid"):
                row = {"gpus": gpus, "k": k, "solver": solver}
                for name in ("cold", "warm", "bottleneck"):
                    times = []
                    for _ in range(5):
                        bw = {
                            "cold": LearnedModel.from_document(model.document()),
                            "warm": model,
                            "bottleneck": reference,
                        }[name]
                        inst = GpuSelectInstance(name="pool", hosts=hosts, k=k, bandwidth=bw)
                        start = time.perf_counter()
                        topoopt.solve(inst, solver)
                        times.append(time.perf_counter() - start)
                    row[f"{name}_ms"] = 1000 * statistics.median(times)
                pools.append(row)
    out["pools"] = pools
    return out


def _mean(rows: list[dict], key: str) -> float:
    return statistics.mean(r[key] for r in rows)


def markdown(results: dict) -> str:
    protocol, learners, suggestions = (
        results["protocol"],
        results["learners"],
        results["suggestions"],
    )
    lines = ["# Learned bandwidth surrogate on the real 4x8 H100 table", ""]
    lines += ["Command: `python benchmarks/learn/bandwidth.py --out benchmarks/learn/results`", ""]
    lines += ["## Accuracy and dispatch quality (mean over seeds)", ""]
    lines += [
        "| N | seeds | MAPE % | Spearman | R² | GBE eha | GBE hybrid | GBE mip | "
        "worst seed GBE hybrid | train s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in SIZES:
        runs = [r for r in protocol if r["n"] == n]
        gbe = {s: [r["gbe"][s] for r in runs] for s in SOLVERS}
        lines.append(
            f"| {n} | {len(runs)} | {_mean(runs, 'mape'):.2f} | {_mean(runs, 'spearman'):.4f} | "
            f"{_mean(runs, 'r2'):.4f} | "
            + " | ".join(f"{statistics.mean(gbe[s]):.4f}" for s in SOLVERS)
            + f" | {min(gbe['gpuselect/hybrid']):.4f} | {_mean(runs, 'train_s'):.2f} |"
        )
    lines += ["", "## Learners on the same features (held-out MAPE % / Spearman, mean over seeds)"]
    lines += ["", "| learner | " + " | ".join(f"N={n}" for n in SIZES) + " |"]
    lines += ["|---|" + "---|" * len(SIZES)]
    for name in sorted({r["learner"] for r in learners}):
        cells = []
        for n in SIZES:
            runs = [r for r in learners if r["learner"] == name and r["n"] == n]
            cells.append(f"{_mean(runs, 'mape'):.2f} / {_mean(runs, 'spearman'):.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Random measurements vs `topoopt learn suggest` (mean over seeds)", ""]
    lines += [
        "| N | random MAPE % | suggested MAPE % | random GBE hybrid | suggested GBE hybrid |",
        "|---|---|---|---|---|",
    ]
    for n in SIZES:
        rand = [r for r in suggestions if r["n"] == n and r["sampling"] == "random"]
        sugg = [r for r in suggestions if r["n"] == n and r["sampling"] == "suggested"]
        lines.append(
            f"| {n} | {_mean(rand, 'mape'):.2f} | {_mean(sugg, 'mape'):.2f} | "
            f"{_mean(rand, 'gbe_hybrid'):.4f} | {_mean(sugg, 'gbe_hybrid'):.4f} |"
        )
    t = results["timing"]
    per = ", ".join(f"{b}: {us:.1f}" for b, us in t["predict"].items())
    lines += ["", "## Time", "", f"Trees per count profile (µs) by batch size: {per}", ""]
    lines += [
        "Searches on H100 pools (30 % of GPUs busy), median of 5: *cold* = a model just loaded "
        "(every profile predicted), *warm* = the same model object again (the cells it met are "
        "remembered), *bottleneck* = the bottleneck model of the same hosts (reference)."
    ]
    lines += ["", "| GPUs | k | solver | cold ms | warm ms | bottleneck ms | cold / bottleneck |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in t["pools"]:
        lines.append(
            f"| {r['gpus']} | {r['k']} | {r['solver']} | {r['cold_ms']:.1f} | "
            f"{r['warm_ms']:.1f} | {r['bottleneck_ms']:.1f} | "
            f"{r['cold_ms'] / r['bottleneck_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "learn" / "results")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not CROSS.is_file():
        print(f"needs {CROSS}", file=sys.stderr)
        return 2
    tasks = [(n, s) for n in SIZES for s in range(args.seeds)]
    with ProcessPoolExecutor(args.workers) as pool:
        protocol = list(pool.map(protocol_run, tasks))
        learners = [r for rs in pool.map(learners_run, tasks) for r in rs]
        suggestions = [r for rs in pool.map(suggestion_run, range(args.seeds)) for r in rs]
    results = {
        "protocol": protocol,
        "learners": learners,
        "suggestions": suggestions,
        "timing": timing(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bandwidth.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "bandwidth.md").write_text(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
