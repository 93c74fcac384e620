"""Communication volumes of a GPT-style job (Arnold Appendix C, eq. 11–13).

Notation of the paper (after Megatron): vocabulary ``V``, global batch ``gb``, micro-batch
``mb``, sequence length ``s``, hidden size ``h``, layers ``l``, DP size ``dp``, PP size
``pp``, virtual-pipeline size ``vp``. Volumes are in **elements** (multiply by the bytes per
element of the data type).

* eq. 11, micro-batches per step: ``m = gb / (mb * dp)``;
* eq. 12, DP volume (the parameters one DP rank synchronises, i.e. its stage):
  ``v_d = h (V + s) + (l / pp) (4h^2 + 2h + E (8h^2 + 7h))`` where ``E`` is the number of
  experts (``E = 1`` for a dense model: the paper's "replace the number of parameters with
  MoE layers");
* eq. 13, PP volume per micro-batch between adjacent stages: ``v_p = 2 mb s h`` (activations
  forward, gradients backward).

The per-GPU weights ``v_w`` are the stage's parameters sharded over ``tp`` GPUs:
``v_w = v_d / tp``.
"""

from __future__ import annotations

from dataclasses import dataclass

from topoopt.core.errors import InvalidInstanceError


@dataclass(frozen=True)
class ModelConfig:
    """A GPT-style training configuration (Arnold Appendix C notation).

    Examples
    --------
    >>> cfg = ModelConfig(V=50257, gb=512, mb=1, s=2048, h=4096, l=32, dp=16, pp=4)
    >>> cfg.micro_batches
    32.0
    >>> round(communication_volumes(cfg).v_p)
    16777216
    """

    V: int
    gb: int
    mb: int
    s: int
    h: int
    l: int  # noqa: E741  (the paper's name for the number of layers)
    dp: int
    pp: int
    vp: int = 1
    tp: int = 1
    experts: int = 1

    def __post_init__(self) -> None:
        for name in ("V", "gb", "mb", "s", "h", "l", "dp", "pp", "vp", "tp", "experts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInstanceError(
                    f"model.{name}", f"must be a positive integer, got {value!r}"
                )

    @property
    def micro_batches(self) -> float:
        """``m = gb / (mb * dp)`` (eq. 11)."""
        return self.gb / (self.mb * self.dp)


@dataclass(frozen=True)
class Volumes:
    """Per-GPU weights ``v_w``, DP volume ``v_d`` and PP volume ``v_p`` (elements)."""

    v_w: float
    v_d: float
    v_p: float


def communication_volumes(cfg: ModelConfig) -> Volumes:
    """Volumes of eq. 12–13 for ``cfg`` (see the module docstring)."""
    h = cfg.h
    per_layer = 4 * h * h + 2 * h + cfg.experts * (8 * h * h + 7 * h)
    v_d = h * (cfg.V + cfg.s) + cfg.l / cfg.pp * per_layer
    v_p = 2 * cfg.mb * cfg.s * h
    return Volumes(v_w=v_d / cfg.tp, v_d=v_d, v_p=v_p)


def affinity_ratios(cfg: ModelConfig) -> tuple[float, float]:
    """Arnold §5.2: ``r1 = mb * v_w / (v_d + v_p)`` and ``r2 = v_d / v_p``."""
    vol = communication_volumes(cfg)
    return cfg.mb * vol.v_w / (vol.v_d + vol.v_p), vol.v_d / vol.v_p
