"""The knapsack MIP, written to topoopt's formulation protocol (``build`` / ``extract`` /
``warm_start``): data as Pyomo ``Param`` and ``Set`` components, module-level rules, Pyomo
imported only here.

``max sum_i v_i x_i`` subject to ``sum_i w_i x_i <= C`` with ``x_i`` binary.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from toy.knapsack import Choice, KnapsackInstance


def _weight_rule(m: pyo.ConcreteModel) -> Any:
    return pyo.quicksum(m.weight[i] * m.take[i] for i in m.I) <= m.capacity


def _value_rule(m: pyo.ConcreteModel) -> Any:
    return pyo.quicksum(m.value[i] * m.take[i] for i in m.I)


def build(instance: KnapsackInstance) -> pyo.ConcreteModel:
    """The binary program of the module docstring."""
    m = pyo.ConcreteModel(name=f"knapsack-{instance.name}")
    m.I = pyo.Set(initialize=[item.name for item in instance.items], ordered=True)
    m.weight = pyo.Param(m.I, initialize={i.name: i.weight for i in instance.items})
    m.value = pyo.Param(m.I, initialize={i.name: i.value for i in instance.items})
    m.capacity = pyo.Param(initialize=instance.capacity)
    m.take = pyo.Var(m.I, domain=pyo.Binary)
    m.weight_limit = pyo.Constraint(rule=_weight_rule)
    m.total_value = pyo.Objective(rule=_value_rule, sense=pyo.maximize)
    return m


def extract(model: pyo.ConcreteModel, instance: KnapsackInstance) -> Choice:
    """The items whose ``x_i`` is 1 in the loaded solution."""
    return frozenset(i for i in model.I if (model.take[i].value or 0.0) > 0.5)


def warm_start(model: pyo.ConcreteModel, choice: Choice) -> None:
    """Set every ``x_i`` from ``choice``."""
    for i in model.I:
        model.take[i].set_value(1 if i in choice else 0)
