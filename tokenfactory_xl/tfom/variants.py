"""Many variants of one site in one pass, computing once what the variants share.

The risk's draws, the tornado's flexes and the "what must be true" scans each move a few
inputs of one site over many values. Most of the model's lines do not read those inputs, even
through other lines: the calendar, the cohorts' timing, the fleet in service, the IRR search's
grid of rates. :func:`variant_model` compiles the lines an output needs in two parts: the lines
the moved inputs do not reach, computed once for the site (:meth:`VariantModel.site_values`),
and the rest, computed for every variant from those values
(:meth:`VariantModel.__call__`). Each line runs the same code on the same operands as in the
whole model: the same values, to the last bit.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from .compiler import Built, built, inputs_of, loaded
from .formula import Line, lines_read, needed
from .operating_model import LINES

#: Each line (by its name) → the inputs and the lines it reads: the same in every split.
_READS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _reads(ln: Line) -> tuple[frozenset[str], frozenset[str]]:
    """The inputs and the lines ``ln`` reads (its first value and its table's guard too)."""
    found = _READS.get(ln.name)
    if found is None:
        lines = lines_read(ln.formula)
        if ln.first is not None:
            lines |= lines_read(ln.first)
        if ln.table is not None and ln.table.guard is not None:
            lines |= lines_read(ln.table.guard)
        found = _READS[ln.name] = (inputs_of([ln]), frozenset(lines))
    return found


def split(lines: Sequence[Line], moved: frozenset[str]
          ) -> tuple[tuple[Line, ...], tuple[Line, ...]]:
    """``lines`` (in model order) as the lines no input of ``moved`` reaches, directly or
    through an earlier line, and the lines it reaches; a recurrent table's lines (one loop)
    stay together."""
    loops: dict[int, set[str]] = {}  # a recurrent table's loop computes all its lines or none
    for ln in lines:
        if ln.table is not None and ln.table.recurrent:
            loops.setdefault(id(ln.table), set()).add(ln.name)
    moving: set[str] = set()
    grew = True
    while grew:  # again until no line joins: a loop's line may read a later line of the loop
        grew = False
        for ln in lines:
            if ln.name in moving:
                continue
            inputs, read = _reads(ln)
            loop = loops.get(id(ln.table), set()) if ln.table is not None else set()
            if inputs & moved or read & moving or loop & moving:
                moving.add(ln.name)
                grew = True
    fixed = tuple(ln for ln in lines if ln.name not in moving)
    return fixed, tuple(ln for ln in lines if ln.name in moving)


class VariantModel:
    """The lines ``targets`` need, compiled as the part that ``moved`` does not reach and the
    part it does (:func:`split`)."""

    def __init__(self, targets: Sequence[str], moved: frozenset[str]):
        from ..files.build_cache import kept

        def build() -> tuple[tuple[str, ...], Built, Built]:
            fixed, moving = split(_needed(tuple(targets)), moved)
            return (tuple(ln.name for ln in fixed), built(fixed),
                    built(moving, given=fixed, returned=targets))

        # the split and both parts kept in the build cache as one file, under a name that
        # stands for the targets and the moved inputs (the lines follow from them and the
        # package's code, which names the file): a run that finds it neither gathers the
        # lines the targets need nor splits them (a few milliseconds of a risk run's CPU)
        tag = hashlib.blake2s(repr((tuple(targets), sorted(moved))).encode(),
                              digest_size=8).hexdigest()
        self.fixed_lines, fixed, moving = kept(f"variants-{tag}", build, libraries=False)
        self._fixed, self._moving = loaded(fixed), loaded(moving)

    def site_values(self, inputs: Mapping[str, object], constants: dict, lists: dict,
                    whole: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """The lines the moved inputs do not reach, for the site as it is: taken from ``whole``
        where it holds them all (the values a run of the whole model gave for the same site,
        ``Result.values``: the same values to the last bit), else computed."""
        if whole is not None and all(name in whole for name in self.fixed_lines):
            return {name: whole[name] for name in self.fixed_lines}
        values = self._fixed(dict(inputs), constants, lists)
        return {name: values[name] for name in self.fixed_lines}

    def __call__(self, inputs: Mapping[str, object], site: dict[str, np.ndarray],
                 constants: dict, lists: dict) -> Mapping[str, np.ndarray]:
        """The targets' lines for the variants ``inputs`` gives (a moved input's values along a
        leading axis), from ``site`` (:meth:`site_values` of the same site); the other lines
        each let go once no later line reads it (:func:`~.compiler._let_go`)."""
        return self._moving({**inputs, "_lines": site}, constants, lists)


@functools.lru_cache(maxsize=8)
def _needed(targets: tuple[str, ...]) -> tuple[Line, ...]:
    """The lines ``targets`` need (a risk sheet's twelve solves all need the live NPV's)."""
    return needed(LINES, list(targets))


@functools.lru_cache(maxsize=32)
def variant_model(targets: tuple[str, ...], moved: frozenset[str]) -> VariantModel:
    """The :class:`VariantModel` of ``targets`` with the inputs ``moved`` (kept for the
    process: a risk sheet's draws and its solves ask for the same ones again)."""
    return VariantModel(targets, moved)
