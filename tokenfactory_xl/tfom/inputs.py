"""One site's inputs, checked: the values the model computes from.

:func:`make_inputs` takes what a user typed (a ``--set`` on the command line, a row of a sites
file, the input cells of a filled-in workbook, a Python dict), starts from the catalogue's
defaults, checks every value against the catalogue and the few rules that tie inputs together
(salvage at most the CapEx, TTFT p99 above p50, measured throughput at most the theoretical), and
returns :class:`SiteInputs`, or raises :class:`~tokenfactory_xl.core.errors.InputError` listing
every problem at once.

Per-scenario inputs are addressed as ``tef_target.Optimised`` for one scenario; a bare
``tef_target`` means the live scenario's value (the CLI's ``--set``) or all three (a sites-file
column), as the caller chooses.

Each input may carry a source note, ``gpus.note`` (methodology §10.7): free text the model never
reads, kept from a sites file or a workbook's "Source / note" column to the workbooks made from
them, and to the portfolio that collects them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from ..core.catalogue import (
    BY_NAME,
    COHORT_BY_NAME,
    COHORT_REQUIRED,
    COHORT_SPECS,
    DERIVED_FROM,
    INPUTS,
    MAX_COHORTS,
    MISSING,
    RISK_RANGES,
    SCENARIO_NAMES,
    BadValue,
    CheckedNumber,
    fmt_number,
    name_fix,
)
from ..core.errors import InputError, Problem
from ..core.names import HIDDEN_IN_TEXT, hidden, not_utf8

#: The suffix of an input's source note: ``gpus.note`` (:func:`split_key`).
NOTE = "note"
#: The longest note: the text one Excel cell holds.
NOTE_MAX_CHARS = 32_767
#: The workbook's defined name for its column of notes, one cell on each input's row.
NOTES_NAME = "source_notes"


class FrozenMapping(Mapping[str, object]):
    """An immutable mapping whose keys, in their order, are shared by every mapping made with
    the same ones: each holds only its values, a tuple.

    A batch keeps every site's inputs and sites-file cells until its portfolio is written; with
    the same 80-odd keys in every site, a dict apiece would hold the keys 10,000 times over.
    """

    __slots__ = ("_positions", "_items")

    #: Each key order seen → the position of each key (a sites file has one, the model another).
    _LAYOUTS: dict[tuple[str, ...], dict[str, int]] = {}
    _MAX_LAYOUTS = 256  # beyond that (keys of every shape), a mapping keeps its own positions

    def __init__(self, values: Mapping[str, object]):
        keys = tuple(values)
        positions = FrozenMapping._LAYOUTS.get(keys)
        if positions is None:
            positions = {key: i for i, key in enumerate(keys)}
            if len(FrozenMapping._LAYOUTS) < FrozenMapping._MAX_LAYOUTS:
                FrozenMapping._LAYOUTS[keys] = positions
        self._positions = positions
        self._items = tuple(values.values())

    def __getitem__(self, name: str) -> object:
        return self._items[self._positions[name]]

    def __contains__(self, name: object) -> bool:
        return name in self._positions

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._items)

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (self.as_dict(),)

    def as_dict(self) -> dict[str, object]:
        """A new dict of the same items, in order (``dict(self.items())``, without a lookup
        per key)."""
        return dict(zip(self._positions, self._items, strict=True))

    def sharing(self, memo: dict[object, dict[object, object]]) -> FrozenMapping:
        """The same mapping holding, for each value, the equal one of ``memo`` (of the same
        type) where there is one: 10,000 sites with a handful of PUEs and GPU counts hold each
        of them once, not 10,000 times."""
        shared = object.__new__(type(self))
        shared._positions = self._positions
        shared._items = tuple(_shared(value, memo) for value in self._items)
        return shared

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"


def _shared(value: object, memo: dict[object, dict[object, object]]) -> object:
    """``value``, or the value ``memo`` already holds that is the same: of the same type, equal,
    and for a tuple the same types in the same places. A zero float (0.0 equals -0.0), a NaN
    (equal to nothing) and a tuple holding either or another tuple are held as they are."""
    if type(value) is tuple:
        value = tuple(_shared(item, memo) for item in value)
        if not all(map(_exact_key, value)):
            return value
        kind: object = tuple(map(type, value))
    elif _exact_key(value):
        kind = type(value)
    else:
        return value
    try:
        return memo.setdefault(kind, {}).setdefault(value, value)
    except TypeError:  # not hashable: held as it is
        return value


def _exact_key(value: object) -> bool:
    """Whether ``value`` as a key finds only values that are the same (with its type)."""
    if type(value) is float:
        return value != 0 and value == value
    return type(value) is not tuple


class SiteInputs(FrozenMapping):
    """The checked inputs of one site, keyed by the catalogue's names.

    A per-scenario input maps to a tuple ``(Base, Optimised, Downside)``; :meth:`live` gives the
    live scenario's value. Instances are immutable; :meth:`replace` returns a checked copy.
    The inputs' source notes (:attr:`notes`) ride beside the mapping, not in it: what the model
    reads is the mapping, and two sites that differ only in their notes compare equal.
    """

    __slots__ = ("_notes",)

    def __init__(self, values: Mapping[str, object], notes: tuple[tuple[str, str], ...] = ()):
        super().__init__(values)
        self._notes = notes

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (dict(self.items()), self._notes)

    def sharing(self, memo: dict[object, dict[object, object]]) -> SiteInputs:
        shared = super().sharing(memo)
        shared._notes = self._notes  # type: ignore[attr-defined]
        return shared  # type: ignore[return-value]

    @property
    def scenario(self) -> str:
        """The live scenario."""
        return self["scenario"]  # type: ignore[return-value]

    def live(self, name: str, scenario: str | None = None) -> object:
        """The value of ``name`` in ``scenario`` (default: the live one)."""
        value = self[name]
        if BY_NAME[name].per_scenario:
            return value[SCENARIO_NAMES.index(scenario or self.scenario)]  # type: ignore[index]
        return value

    def replace(self, changes: Mapping[str, object], *, bare: Literal["live", "all"] = "live"):
        """A checked copy with ``changes`` applied (same key forms as :func:`make_inputs`)."""
        # values already checked are handed back as such: taken as they are, not read again as
        # a user's typing (a growth of 5.0, 500 % a quarter, is no 5 typed for 5 %)
        base = {key: CheckedNumber(value) if type(value) is float else value
                for key, value in self.flat().items()}
        asked = str(changes.get("scenario", self.scenario)).strip().lower()
        live = next((s for s in SCENARIO_NAMES if s.lower() == asked), self.scenario)
        for key in changes:
            name, scenario = split_key(str(key))
            if scenario is None and name in BY_NAME and BY_NAME[name].per_scenario:
                # a bare per-scenario change replaces the scenario values it targets
                for target in (SCENARIO_NAMES if bare == "all" else (live,)):
                    base.pop(f"{name}.{target}", None)
        if "cohorts" not in changes:
            base["cohorts"] = self.cohorts
        base.update((f"{name}.{NOTE}", text) for name, text in self.notes.items()
                    if f"{name}.{NOTE}" not in changes)
        return make_inputs({**base, **changes}, bare=bare)

    def allows(self, key: str, value: object) -> bool:
        """Whether :meth:`replace` with ``{key: value}`` (one numeric input, ``gpus`` or
        ``tef_target.Optimised``; a bare per-scenario name is the live scenario's) would pass
        every rule :func:`make_inputs` applies, found without checking again the inputs that do
        not change: the input's own range, the rules that tie inputs together and the cohorts'.
        A solve asks this of each value it scans."""
        name, scenario = split_key(key)
        spec = BY_NAME[name]
        try:
            parsed = spec.parse(value)
        except BadValue:
            return False
        values = self.as_dict()
        if spec.per_scenario:
            index = SCENARIO_NAMES.index(scenario or self.scenario)
            held = list(values[name])  # type: ignore[call-overload]
            held[index] = spec.default_for(SCENARIO_NAMES[index]) if parsed is MISSING else parsed
            values[name] = tuple(held)
        else:
            values[name] = spec.default if parsed is MISSING else parsed
        problems = _cross_checks(values, values, "")
        _cohorts(self.cohorts, values, problems, "")
        return not problems

    @property
    def notes(self) -> dict[str, str]:
        """Each input's source note (methodology §10.7), by input name in the catalogue's order;
        inputs without one are left out. The model never reads them."""
        return dict(self._notes)

    @property
    def cohorts(self) -> tuple[dict[str, object], ...]:
        """The fleet's cohorts after the first (the site's own columns are cohort 1): each a
        dict of :data:`~tokenfactory_xl.core.catalogue.COHORT_SPECS` names, ``None`` where blank
        (the site's value is used)."""
        return self.get("cohorts", ())  # type: ignore[return-value]

    def flat(self) -> dict[str, object]:
        """Every value under its sites-file column name (``tef_target.Base`` …)."""
        out: dict[str, object] = {}
        for spec in INPUTS:
            if spec.per_scenario:
                for scenario, value in zip(SCENARIO_NAMES, self[spec.name], strict=True):  # type: ignore
                    out[f"{spec.name}.{scenario}"] = value
            else:
                out[spec.name] = self[spec.name]
        return out

    @property
    def site_tps_per_gpu(self) -> float:
        """Cohort 1's theoretical TPS per GPU: the prefill/decode blend when both are given."""
        return site_tps_per_gpu(self)

    @property
    def tef_now(self) -> float:
        """Measured ÷ theoretical throughput of cohort 1 (today's fleet) [fraction]."""
        theoretical = self["gpus"] * self.site_tps_per_gpu  # type: ignore[operator]
        return self["measured_tps"] / theoretical  # type: ignore[operator]


def site_tps_per_gpu(v: Mapping[str, object]) -> float:
    """methodology §2/§6: with prefill and decode TPS both given, theoretical TPS per GPU is
    1 ÷ ((1 − o) ÷ T_p + o ÷ T_d); otherwise the theoretical_tps_per_gpu input."""
    prefill, decode = v.get("prefill_tps_per_gpu"), v.get("decode_tps_per_gpu")
    if prefill and decode:
        o = float(v["output_share"])  # type: ignore[arg-type]
        return 1.0 / ((1 - o) / float(prefill) + o / float(decode))  # type: ignore[arg-type]
    return float(v["theoretical_tps_per_gpu"])  # type: ignore[arg-type]


def split_key(key: str) -> tuple[str, str | None]:
    """``"tef_target.optimised"`` → ``("tef_target", "Optimised")``; bare names → ``(name, None)``;
    a source note ``"gpus.note"`` → ``("gpus", "note")`` (:data:`NOTE`), for any input.

    Raises :class:`BadValue` for a scenario suffix that is not a scenario, or one on an input that
    has a single value.
    """
    name, _, suffix = key.strip().partition(".")
    if not suffix:
        return name, None
    if suffix.strip().lower() == NOTE:
        return name, NOTE
    for scenario in SCENARIO_NAMES:
        if suffix.lower() == scenario.lower():
            if name in BY_NAME and not BY_NAME[name].per_scenario:
                raise BadValue(f"{name} has one value for all scenarios", f"use the column {name}")
            return name, scenario
    raise BadValue("is not a scenario", f"the scenarios are {', '.join(SCENARIO_NAMES)} (or "
                   f"{NOTE}, for the input's source note)")


def note_text(value: object) -> str:
    """A source note as it is kept: text as typed (a line break as ``\\n``), a number or a date
    as the text it shows, ``""`` for none.

    Raises :class:`BadValue` for a note holding hidden characters or longer than a cell holds.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif hasattr(value, "isoformat"):
        text = value.isoformat()  # type: ignore[union-attr]
    else:
        text = str(value)
    text = text.replace("\r\n", "\n").strip()
    undecodable = not_utf8(text)
    if undecodable:
        raise BadValue(undecodable, "type the note again in UTF-8")
    which = hidden(text, HIDDEN_IN_TEXT)
    if which:
        raise BadValue(f"contains control characters: {which}, which do not show or change how "
                       "the text shows", "type the note again without them")
    if len(text) > NOTE_MAX_CHARS:
        raise BadValue(f"is {len(text):,} characters long, more than the {NOTE_MAX_CHARS:,} one "
                       "cell holds", "shorten the note, or keep the document elsewhere and name it")
    return text


def make_inputs(
    values: Mapping[str, object] | None = None,
    *,
    bare: Literal["live", "all"] = "live",
    where: str = "",
    cohort_where: Sequence[str] = (),
) -> SiteInputs:
    """Check ``values`` against the catalogue and return the site's inputs.

    Parameters
    ----------
    values : input name → value; missing names and empty values take the catalogue default.
        Per-scenario inputs accept ``name.Scenario`` keys, and a bare name with one value or a
        sequence of three (Base, Optimised, Downside).
    bare : what a bare per-scenario name with a single value sets: the live scenario's value
        (``"live"``, the CLI's ``--set``) or every scenario's (``"all"``, a sites-file column).
    where : prefix for every problem, e.g. ``"row 4"`` of a sites file.
    cohort_where : where each row of ``values["cohorts"]`` came from (``"cohorts.csv row 3"``),
        in their order: the prefix of that row's problems (default: ``"cohort 2"`` … after
        ``where``).

    Raises
    ------
    InputError
        listing every problem found, each naming the input, the value, what is allowed and the fix.
    """
    values = dict(values or {})
    problems: list[Problem] = []

    def bad(key: str, value: object, exc: BadValue) -> None:
        problems.append(Problem(key, value, exc.message, exc.fix, where))

    # Sort the keys: unknown ones are reported, scenario-specific ones wait for the scenario.
    plain: dict[str, object] = {}
    notes: dict[str, str] = {}
    scenario_keys: list[tuple[str, str, str, object]] = []
    cohort_rows = values.pop("cohorts", None) or ()
    for key, value in values.items():
        try:
            name, scenario = split_key(str(key))
        except BadValue as exc:
            bad(str(key), value, exc)
            continue
        if name in DERIVED_FROM:
            problems.append(Problem(str(key), value, "is computed by the model, not an input",
                                    f"it follows from {DERIVED_FROM[name]}", where))
        elif name not in BY_NAME:
            problems.append(Problem(str(key), value, "is not a known input", name_fix(name),
                                    where))
        elif scenario == NOTE:
            try:
                text = note_text(value)
            except BadValue as exc:  # a long note is shown by its start
                shown = value if not isinstance(value, str) or len(value) <= 60 \
                    else f"{value[:57]}…"
                bad(str(key), shown, exc)
            else:
                if text:
                    notes[name] = text
        elif scenario is None:
            plain[name] = value
        else:
            scenario_keys.append((str(key), name, scenario, value))

    out: dict[str, object] = {}
    for spec in INPUTS:
        if spec.per_scenario:
            out[spec.name] = list(spec.default)  # type: ignore[arg-type]
            continue
        raw = plain.get(spec.name, MISSING)
        try:
            parsed = spec.parse(raw)
        except BadValue as exc:
            bad(spec.name, raw, exc)
            parsed = MISSING
        out[spec.name] = spec.default if parsed is MISSING else parsed
    live = SCENARIO_NAMES.index(out["scenario"])  # type: ignore[arg-type]

    def set_scenario_value(key: str, name: str, index: int, raw: object) -> None:
        try:
            parsed = BY_NAME[name].parse(raw)
        except BadValue as exc:
            bad(key, raw, exc)
            return
        if parsed is not MISSING:
            out[name][index] = parsed  # type: ignore[index]

    for spec in INPUTS:
        if not spec.per_scenario or spec.name not in plain:
            continue
        raw = plain[spec.name]
        if isinstance(raw, Sequence) and not isinstance(raw, str):
            if len(raw) != len(SCENARIO_NAMES):
                bad(spec.name, raw, BadValue(
                    f"needs {len(SCENARIO_NAMES)} values ({', '.join(SCENARIO_NAMES)})",
                    f"or set one scenario with {spec.name}.{SCENARIO_NAMES[1]}"))
                continue
            for index, item in enumerate(raw):
                set_scenario_value(f"{spec.name}.{SCENARIO_NAMES[index]}", spec.name, index, item)
        elif bare == "all":
            for index in range(len(SCENARIO_NAMES)):
                set_scenario_value(spec.name, spec.name, index, raw)
        else:
            set_scenario_value(spec.name, spec.name, live, raw)
    for key, name, scenario, raw in scenario_keys:
        set_scenario_value(key, name, SCENARIO_NAMES.index(scenario), raw)
    for spec in INPUTS:
        if spec.per_scenario:
            value = tuple(out[spec.name])  # type: ignore[arg-type]
            # the default's own tuple where it is the default: one object for every site
            out[spec.name] = spec.default if value == spec.default else value

    problems += _cross_checks(out, {**out, **plain}, where)
    out["cohorts"] = _cohorts(cohort_rows, out, problems, where, cohort_where)
    if problems:
        raise InputError(problems)
    return SiteInputs(out, tuple((spec.name, notes[spec.name]) for spec in INPUTS
                                 if spec.name in notes))


def _cohorts(rows: object, site: dict[str, object], problems: list[Problem],
             where: str, cohort_where: Sequence[str] = ()) -> tuple[dict[str, object], ...]:
    """Check the cohort rows after the first (methodology §4.1, §6 "Cohorts")."""
    if isinstance(rows, Mapping) or not isinstance(rows, Sequence) or isinstance(rows, str):
        problems.append(Problem("cohorts", rows, "must be a list of cohort rows",
                                "give a list of dicts with cohort, online_month and gpus",
                                where))
        return ()

    def located(n: int) -> str:
        """Where cohort ``n`` (2 …) came from, for its problems."""
        if n - 2 < len(cohort_where):
            return cohort_where[n - 2]
        return f"{where + ', ' if where else ''}cohort {n}"

    if len(rows) > MAX_COHORTS - 1:
        room = MAX_COHORTS - 1
        fix = "merge cohorts that come online in the same month, or split the site"
        if len(cohort_where) > room:  # name the first row the workbook has no column for
            row = rows[room]
            problems.append(Problem(
                "cohort", row.get("cohort") if isinstance(row, Mapping) else row,
                f"is the site's cohort {room + 2} (its own GPUs are cohort 1), more than the "
                f"{MAX_COHORTS} the workbook holds; the site has {len(rows) + 1} in all", fix,
                located(room + 2)))
        else:
            problems.append(Problem(
                "cohorts", f"{len(rows)} rows", f"is more than the {room} cohorts the workbook "
                "holds beside the site's own GPUs (cohort 1)", fix, where))
        return ()
    horizon = site["horizon_months"]
    names = {"1"}  # cohort 1 is the site's own columns
    out: list[dict[str, object]] = []
    for n, row in enumerate(rows, start=2):
        at = located(n)
        if not isinstance(row, Mapping):
            problems.append(Problem("cohorts", row, "is not a cohort row",
                                    "give a dict of cohort columns", at))
            continue
        cohort: dict[str, object] = {spec.name: None for spec in COHORT_SPECS}
        for key, raw in row.items():
            key = str(key).strip()
            if key == "site_name":
                continue
            spec = COHORT_BY_NAME.get(key)
            if spec is None:
                known = ", ".join(s.name for s in COHORT_SPECS)
                problems.append(Problem(key, raw, "is not a cohort column",
                                        f"the cohort columns are site_name, {known}", at))
                continue
            try:
                cohort[key] = spec.parse(raw)
            except BadValue as exc:
                problems.append(Problem(key, raw, exc.message, exc.fix, at))
        for key in COHORT_REQUIRED:
            if cohort[key] is None and key in row and row[key] not in (None, ""):
                continue  # already reported as a bad value
            if cohort[key] is None:
                problems.append(Problem(key, row.get(key), "is missing",
                                        f"every cohort row needs {', '.join(COHORT_REQUIRED)}",
                                        at))
        name = cohort["cohort"]
        if name is not None:
            if str(name).lower() in names:
                problems.append(Problem("cohort", name, "is a duplicate cohort name",
                                        "give each cohort of a site its own name (cohort 1, "
                                        "the site's own GPUs, is \"1\")", at))
            names.add(str(name).lower())
        online, retire = cohort["online_month"], cohort["retire_month"]
        if isinstance(online, int) and online > horizon:  # type: ignore[operator]
            problems.append(Problem("online_month", online,
                                    f"is past the horizon of {horizon} months",
                                    "bring it inside the horizon or lengthen horizon_months",
                                    at))
        if isinstance(online, int) and isinstance(retire, int) and retire < online:
            problems.append(Problem("retire_month", retire,
                                    f"is before the cohort's online_month ({online})",
                                    "a cohort retires in or after the month it comes online",
                                    at))
        capex = cohort["capex_per_gpu"] if cohort["capex_per_gpu"] is not None \
            else site["capex_per_gpu"]
        salvage = cohort["salvage_per_gpu"] if cohort["salvage_per_gpu"] is not None \
            else site["salvage_per_gpu"]
        if salvage > capex:  # type: ignore[operator]
            shown = fmt_number(capex)  # type: ignore[arg-type]
            problems.append(Problem("salvage_per_gpu", salvage,
                                    f"is more than the cohort's capex_per_gpu ({shown})",
                                    "salvage is the resale value of a GPU and cannot exceed "
                                    "what it cost", at))
        out.append(cohort)
    return tuple(out)


def _cross_checks(v: dict[str, object], typed: dict[str, object], where: str) -> list[Problem]:
    """The rules that tie two or more inputs together (``typed``: the values as the user gave
    them, echoed in the messages)."""
    found: list[Problem] = []
    n = fmt_number
    if v["salvage_per_gpu"] > v["capex_per_gpu"]:  # type: ignore[operator]
        found.append(Problem(
            "salvage_per_gpu", typed["salvage_per_gpu"],
            f"is more than capex_per_gpu ({n(v['capex_per_gpu'])})",
            "salvage is the resale value of a GPU and cannot exceed what it cost", where))
    if v["ttft_p99_ms"] <= v["ttft_p50_ms"]:  # type: ignore[operator]
        found.append(Problem(
            "ttft_p99_ms", typed["ttft_p99_ms"],
            f"must be above ttft_p50_ms ({n(v['ttft_p50_ms'])} ms)",
            "the 99th percentile of TTFT is always above its median; check the two are not "
            "swapped", where))
    if (v["prefill_tps_per_gpu"] is None) != (v["decode_tps_per_gpu"] is None):
        given, other = (("prefill_tps_per_gpu", "decode_tps_per_gpu")
                        if v["decode_tps_per_gpu"] is None
                        else ("decode_tps_per_gpu", "prefill_tps_per_gpu"))
        found.append(Problem(given, typed[given], f"is given without {other}",
                             "give both (their blend sets the theoretical TPS) or neither",
                             where))
    for r in RISK_RANGES:  # methodology §10.6: a range around the live value, low to high
        low, high = v[f"range_low_{r.driver}"], v[f"range_high_{r.driver}"]
        neutral = 1 if r.how == "factor" else 0
        live = "v × 1" if r.how == "factor" else "v + 0"
        if low > high:  # type: ignore[operator]
            found.append(Problem(
                f"range_low_{r.driver}", typed[f"range_low_{r.driver}"],
                f"is above range_high_{r.driver} ({n(high)})",
                f"give the low end of {r.driver}'s range first: low at most high (the range "
                f"turns round by itself where the live value is negative)", where))
        elif not low <= neutral <= high:  # type: ignore[operator]
            found.append(Problem(
                f"range_{'low' if low > neutral else 'high'}_{r.driver}",
                typed[f"range_{'low' if low > neutral else 'high'}_{r.driver}"],
                f"leaves the live value ({live}) outside {r.driver}'s range "
                f"{n(low)} … {n(high)}",
                f"the range is around the live case: keep the low at most {neutral} and the "
                f"high at least {neutral}", where))
    theoretical = v["gpus"] * site_tps_per_gpu(v)  # type: ignore[operator]
    if v["measured_tps"] > theoretical:  # type: ignore[operator]
        found.append(Problem(
            "measured_tps", typed["measured_tps"],
            f"is above the theoretical {n(theoretical)} tokens/s (gpus × theoretical_tps_per_gpu)"
            ", so TEF now would exceed 100%",
            "measured_tps is the whole cluster's throughput and theoretical_tps_per_gpu one "
            "GPU's peak: check both, and that gpus counts the whole fleet", where))
    return found


def default_inputs() -> SiteInputs:
    """The catalogue's default site."""
    return make_inputs({})
