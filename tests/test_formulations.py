"""The formulation protocol: every formulation of every family builds a model that pickles,
warm starts from a solution and reads it back; the generic MIP solver; solver scope; no Pyomo
import outside MIPs."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pyomo.environ as pyo
import pytest

import topoopt
from topoopt.core.errors import TopooptError, UnsupportedInstanceError
from topoopt.core.formulation import PROTOCOL_FUNCTIONS, MipSolver, load_formulation
from topoopt.core.mip import solve_model
from topoopt.core.registry import get_family, solver_class, solver_names
from topoopt.core.status import TerminationReason

# Every formulation and the build options of each of its models (``build(instance, **opts)``).
VARIANTS: dict[str, tuple[dict[str, Any], ...]] = {
    "topoopt.placement.formulations.coarse": ({"unit": "pp"}, {"unit": "dp"}),
    "topoopt.placement.formulations.exact": ({}, {"max_dp_use": 2, "max_pp_use": 2}),
    "topoopt.placement.formulations.levels": ({}, {"symmetric": False}),
    "topoopt.gpuselect.formulations.profile_mip": ({"choice": "count"}, {"choice": "subset"}),
    "topoopt.clusterselect.formulations.select_mip": ({},),
    "topoopt.partition.formulations.cut_mip": ({}, {"symmetry": False}),
    "topoopt.parallelconfig.formulations.grid_mip": ({}, {"symmetry": False}),
    "topoopt.parallelconfig.formulations.segment_mip": ({}, {"symmetry": False}),
    "topoopt.ocs.formulations.tdm_mip": ({}, {"symmetry": False}),
}
FAMILY_OF = {
    "topoopt.placement.formulations.coarse": "placement",
    "topoopt.placement.formulations.exact": "placement",
    "topoopt.placement.formulations.levels": "placement",
    "topoopt.gpuselect.formulations.profile_mip": "gpuselect",
    "topoopt.clusterselect.formulations.select_mip": "clusterselect",
    "topoopt.partition.formulations.cut_mip": "partition",
    "topoopt.parallelconfig.formulations.grid_mip": "parallelconfig",
    "topoopt.parallelconfig.formulations.segment_mip": "parallelconfig",
    "topoopt.ocs.formulations.tdm_mip": "ocs",
}


def _declined(path: str, instance: Any) -> bool:
    """Whether a registered solver of the formulation declines the example (e.g. the minipod
    model on an objective that weighs every level)."""
    return any(
        cls.formulation == path and cls.unsupported_reason(instance) is not None
        for name in solver_names()
        if issubclass(cls := solver_class(name), MipSolver)
    )


def _cases() -> Iterator[Any]:
    for path, variants in VARIANTS.items():
        for opts in variants:
            for index, instance in enumerate(get_family(FAMILY_OF[path]).examples()):
                if _declined(path, instance):
                    continue
                label = ",".join(f"{k}={v}" for k, v in opts.items()) or "default"
                yield pytest.param(
                    path, opts, instance, id=f"{path.rsplit('.', 1)[1]}-{label}-ex{index}"
                )


CASES = list(_cases())


def _mip_solvers() -> list[type[MipSolver]]:
    return [cls for name in solver_names() if issubclass(cls := solver_class(name), MipSolver)]


def test_every_formulation_of_a_registered_solver_is_covered() -> None:
    formulations = {cls.formulation for cls in _mip_solvers()}
    assert formulations >= {"topoopt.gpuselect.formulations.profile_mip"}
    assert formulations <= set(VARIANTS), "add the new formulation to VARIANTS"


@pytest.mark.parametrize("path", sorted(VARIANTS))
def test_formulations_provide_the_protocol(path: str) -> None:
    module = load_formulation(path)
    for function in PROTOCOL_FUNCTIONS:
        assert callable(getattr(module, function))


def test_a_module_without_the_protocol_is_refused() -> None:
    with pytest.raises(TopooptError, match="does not provide build, extract, warm_start"):
        load_formulation("topoopt.core.status")


def _constraint_text(model: pyo.ConcreteModel) -> list[tuple[str, str]]:
    return [
        (c.name, str(c.expr)) for c in model.component_data_objects(pyo.Constraint, active=True)
    ] + [(o.name, str(o.expr)) for o in model.component_data_objects(pyo.Objective)]


def _no_plain_attributes(model: pyo.ConcreteModel) -> list[str]:
    """Names set on the model that are not Pyomo components (data must be Params/Sets)."""
    fresh = set(vars(pyo.ConcreteModel()))
    components = {c.local_name for c in model.component_objects(descend_into=False)}
    return sorted(set(vars(model)) - fresh - components)


@pytest.mark.parametrize(("path", "opts", "instance"), CASES)
def test_model_pickles_and_unpickles(path: str, opts: dict[str, Any], instance: Any) -> None:
    """Data as Params and Sets, rules at module level: the model survives pickling whole."""
    module = load_formulation(path)
    model = module.build(instance, **opts)
    assert _no_plain_attributes(model) == []
    clone = pickle.loads(pickle.dumps(model))
    assert _constraint_text(clone) == _constraint_text(model)
    out = solve_model(clone)
    reference = solve_model(model)
    assert out.termination is reference.termination
    if reference.has_solution:
        assert out.objective == pytest.approx(reference.objective)
        family = get_family(FAMILY_OF[path])
        assert family.check(instance, module.extract(clone, instance)) == []


def _violations(model: pyo.ConcreteModel, tol: float = 1e-9) -> list[str]:
    bad = []
    for var in model.component_data_objects(pyo.Var):
        if var.value is None:
            bad.append(f"{var.name} unset")
    if bad:
        return bad
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if con.has_lb() and body < pyo.value(con.lower) - tol:
            bad.append(f"{con.name}: {body} < {pyo.value(con.lower)}")
        if con.has_ub() and body > pyo.value(con.upper) + tol:
            bad.append(f"{con.name}: {body} > {pyo.value(con.upper)}")
    return bad


WARM_STARTABLE = [c for c in CASES if "max_dp_use" not in c.values[1]]


@pytest.mark.parametrize(("path", "opts", "instance"), WARM_STARTABLE)
def test_warm_start_from_the_optimum_is_feasible(
    path: str, opts: dict[str, Any], instance: Any
) -> None:
    """``warm_start(model, oracle solution)`` sets every variable and breaks no constraint;
    for the exact formulations its objective is the family's objective of that solution, and
    ``extract`` reads back a solution as good."""
    family = get_family(FAMILY_OF[path])
    assert family.oracle is not None
    optimum = topoopt.solve(instance, family.oracle)
    module = load_formulation(path)
    model = module.build(instance, **opts)
    module.warm_start(model, optimum.solution)
    assert _violations(model) == []
    if path.endswith(("exact", "profile_mip", "levels")):
        objective = next(model.component_data_objects(pyo.Objective))
        assert pyo.value(objective) == pytest.approx(optimum.objective)
        back = module.extract(model, instance)
        assert family.evaluate(instance, back) == pytest.approx(optimum.objective)


# --------------------------------------------------------------------------- the generic solver


def test_mip_solvers_share_the_generic_class() -> None:
    names = {cls.name for cls in _mip_solvers()}
    assert names >= {"placement/coarse-mip", "placement/exact-mip", "gpuselect/mip"}
    for cls in _mip_solvers():
        assert cls.uses_backend
        assert isinstance(load_formulation(cls.formulation), ModuleType)


def test_generic_solver_runs_a_formulation_given_by_path() -> None:
    """A bare subclass naming a formulation is a working exact solver."""

    class Profile(MipSolver):
        name = "gpuselect/test-profile"
        family = "gpuselect"
        exact = True
        gives_bound = True
        formulation = "topoopt.gpuselect.formulations.profile_mip"

    inst = get_family("gpuselect").examples()[1]
    result = Profile().solve(inst)
    reference = topoopt.solve(inst, "gpuselect/mip")
    assert result.status is topoopt.SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(reference.objective)


def test_non_exact_mip_reports_completed_without_bound() -> None:
    inst = get_family("placement").examples()[1]
    result = topoopt.solve(inst, "placement/coarse-mip")
    assert result.termination is TerminationReason.COMPLETED
    assert result.status is topoopt.SolutionStatus.FEASIBLE and math.isinf(result.bound)


# --------------------------------------------------------------------------- scope


def _callable_instance() -> Any:
    base = get_family("gpuselect").examples()[0]
    fn: Callable[[list[tuple[str, int]]], float] = lambda s: float(len(s))  # noqa: E731
    return base.with_bandwidth(fn)


def test_gpuselect_mip_refuses_a_callable_bandwidth_model() -> None:
    inst = _callable_instance()
    with pytest.raises(UnsupportedInstanceError, match="structured bandwidth model") as info:
        topoopt.solve(inst, "gpuselect/mip")
    assert "gpuselect/mip does not support this instance" in str(info.value)
    assert "'callable'" in str(info.value)


def test_solvers_for_leaves_the_mip_out_when_it_cannot_model_the_instance() -> None:
    names = {info.name for info in topoopt.solvers_for(_callable_instance())}
    assert "gpuselect/mip" not in names and "gpuselect/enumerate" in names
    structured = get_family("gpuselect").examples()[0]
    assert "gpuselect/mip" in {info.name for info in topoopt.solvers_for(structured)}


# --------------------------------------------------------------------------- lazy Pyomo


def test_heuristics_and_import_do_not_import_pyomo() -> None:
    code = (
        "import sys, topoopt; "
        "topoopt.solve(topoopt.load('instances/placement/arnold-paper/iii-even-a0.5.json'), "
        "'placement/best-fit'); "
        "topoopt.solvers_for('gpuselect'); "
        "print('pyomo' in sys.modules)"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out.stderr
