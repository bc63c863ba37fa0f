"""Plan against actual: ``tokenfactory-xl track WORKBOOK RESULT_FILE…``.

The model plans a TEF ramp; the serving stack measures throughput every week. ``track`` reads
benchmark result files or Prometheus scrapes through
:func:`tokenfactory_xl.capacity.actuals.read_files` (every format ``actuals`` reads) and appends to
the workbook's **Actuals** sheet one dated row per measurement:

- the measured throughput of the instance [tokens/s] and the GPUs that served it (``--gpus``, or
  the GPU count the file states); the throughput per GPU;
- **TEF actual** = measured TPS per GPU ÷ cohort 1's theoretical TPS per GPU (methodology §1: the
  TEF the site's ``measured_tps`` stands for), cohort 1 being in service that month;
- **TEF plan**: the model's TEF of the workbook's live scenario in that month (the ramp of
  §4.2); the **variance** = actual − plan;
- the **revenue the variance is worth** at that month's price: variance × the month's
  theoretical tokens × SLA × the plan's sell-through ÷ 10⁶ × the month's market price.

The month of a measurement is ``--month YYYY-MM``, else the date the file itself records (a
``vllm bench serve`` result's ``date``, a scrape's timestamps); a file that records none needs
``--month``. A month outside the workbook's horizon is refused with the reason. A measurement is
identified by the bytes of its files (and its run within a file): the same file tracked twice
adds nothing. Nothing is written unless every file is usable; the workbook is replaced
atomically (a temporary file renamed over it), every part other than the Actuals sheet and its
chart byte for byte as it was.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import TokenFactoryError
from ..tfom.inputs import SiteInputs

_DATE_KEYS = ("date", "timestamp", "start_time", "datetime")


@dataclass(frozen=True)
class Tracked:
    """What one ``track`` run did: rows added, measurements already there, and the sheet."""

    workbook: Path
    added: tuple[dict[str, object], ...]
    already: tuple[tuple[str, str], ...]  # (source, the month it was tracked in)
    rows: tuple[dict[str, object], ...]
    currency: str = ""  # the workbook's, for the money the command prints


class TrackError(TokenFactoryError, ValueError):
    """A file or workbook ``track`` cannot use: the message names it, the reason and the fix."""


def parse_month(text: str) -> dt.date:
    """``2027-03`` → 1 March 2027 (``--month``)."""
    found = re.fullmatch(r"\s*(\d{4})-(\d{1,2})\s*", text)
    if found is None or not 1 <= int(found.group(2)) <= 12:
        raise argparse.ArgumentTypeError(f"{text!r} is not a month; give YYYY-MM, e.g. 2027-03")
    return dt.date(int(found.group(1)), int(found.group(2)), 1)


def _stamp(value: object) -> dt.date | None:
    """A date a result file records: ``20260428-105748`` (vllm bench serve), ISO 8601, or unix
    seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value) and value > 1e9:
        seconds = value / 1000 if value > 1e11 else value
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).date()
    if isinstance(value, str):
        text = value.strip()
        found = re.fullmatch(r"(\d{4})(\d{2})(\d{2})[-_T]?\d{0,6}", text)
        if found:
            try:
                return dt.date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
            except ValueError:
                return None
        try:
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date()
        except ValueError:
            return None
    return None


def file_dates(text: str) -> list[dt.date | None]:
    """The date each run of a JSON (or JSON-lines) result file records, in the runs' order."""
    stripped = text.strip()
    try:
        objects = [json.loads(stripped)]
    except (json.JSONDecodeError, RecursionError):
        objects = []
        for line in stripped.splitlines():
            try:
                objects.append(json.loads(line)) if line.strip() else None
            except (json.JSONDecodeError, RecursionError):
                return []
    if len(objects) == 1 and isinstance(objects[0], list):
        objects = objects[0]
    out: list[dt.date | None] = []
    for obj in objects:
        found = None
        if isinstance(obj, dict):
            for key in _DATE_KEYS:
                found = found or _stamp(obj.get(key))
        out.append(found)
    return out


@dataclass(frozen=True)
class Reading:
    """One measurement, with where it came from, its month and its identity."""

    measurement: object  # actuals.Measurement
    files: tuple[str, ...]
    month: dt.date | None
    fingerprint: str
    run: int  # the run's position in its file (0 when the file holds one)


def _fingerprint(paths: Sequence[str], run: int) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    digest.update(str(run).encode())
    return digest.hexdigest()[:16]


def read_measurements(paths: Sequence[str], month: dt.date | None = None,
                      interval_s: float | None = None) -> list[Reading]:
    """Every measurement of ``paths`` (each run of a benchmark file; one per pair of scrapes),
    read by :func:`tokenfactory_xl.capacity.actuals.read_files`."""
    from ..capacity.actuals import FileProblem, looks_like_prometheus, read_files, read_scrape

    benchmarks, scrapes = [], []
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig") as handle:
                text = handle.read(64 * 1024 * 1024)
        except (OSError, UnicodeDecodeError):
            text = ""  # read_files says what is wrong with it
        (scrapes if looks_like_prometheus(text) else benchmarks).append((path, text))
    out: list[Reading] = []
    try:
        for path, text in benchmarks:
            runs = read_files([path], interval_s)
            dates = file_dates(text)
            for index, found in enumerate(runs):
                own = dates[index] if index < len(dates) else None
                out.append(Reading(found, (path,), month or own,
                                   _fingerprint([path], index if len(runs) > 1 else 0),
                                   index + 1 if len(runs) > 1 else 0))
        if scrapes:
            (found,) = read_files([p for p, _ in scrapes], interval_s)
            times = [read_scrape(p, t).time for p, t in scrapes]
            latest = max((t for t in times if t is not None), default=None)
            own = None if latest is None else dt.datetime.fromtimestamp(
                latest, dt.timezone.utc).date()
            out.append(Reading(found, tuple(p for p, _ in scrapes), month or own,
                               _fingerprint(sorted(p for p, _ in scrapes), 0), 0))
    except FileProblem as exc:
        raise TrackError(str(exc)) from None
    return out


def _months_between(start: dt.date, month: dt.date) -> int:
    """Model month of ``month`` (the month of ``start`` is month 1)."""
    return (month.year - start.year) * 12 + month.month - start.month + 1


def _line(result, scenario: str, name: str):  # type: ignore[no-untyped-def]
    """A monthly line of the scenario (or of the fleet, shared by every scenario)."""
    lines = result.scenarios[scenario].lines
    return lines[name] if name in lines else result.lines[name]


def plan_rows(inputs: SiteInputs, readings: Sequence[Reading], gpus: int | None = None
              ) -> list[dict[str, object]]:
    """The Actuals rows of ``readings`` for a site (raises :class:`TrackError` naming the file
    for a measurement that cannot be placed: no date, a month outside the horizon, no GPU count,
    no throughput)."""
    from ..tfom.evaluation import run

    result = run(inputs)
    scenario = inputs.scenario
    start = inputs["start_date"]
    horizon = int(inputs["horizon_months"])  # type: ignore[call-overload]
    retire = inputs["retire_month"]
    last_in_service = min(horizon, int(retire)) if retire is not None else horizon  # type: ignore
    theoretical = inputs.site_tps_per_gpu
    sla = float(result.scenarios[scenario].summary["sla"])  # type: ignore[arg-type]
    rows = []
    for reading in readings:
        m = reading.measurement
        where = " + ".join(reading.files) + (f" (run {reading.run})" if reading.run else "")
        if not m.tps > 0:  # type: ignore[attr-defined]
            raise TrackError(f"{where}: measured no throughput (0 tokens/s); nothing to track")
        if reading.month is None:
            raise TrackError(f"{where}: the file records no date; give the month it was "
                             "measured with --month YYYY-MM")
        month = reading.month.replace(day=1)
        number = _months_between(start, month)  # type: ignore[arg-type]
        first = f"{start:%Y-%m}"
        end = _add_months(start, horizon - 1)  # type: ignore[arg-type]
        if number < 1:
            raise TrackError(f"{where}: measured in {month:%Y-%m}, before the workbook's "
                             f"timeline starts ({first} is month 1); give --month if the file's "
                             "date is not when it was measured")
        if number > horizon:
            raise TrackError(f"{where}: measured in {month:%Y-%m}, after the workbook's horizon "
                             f"({first} to {end:%Y-%m}, {horizon} months)")
        if number > last_in_service:
            raise TrackError(f"{where}: measured in {month:%Y-%m} (month {number}), after cohort "
                             f"1 retires (retire_month {last_in_service}): there is no cohort-1 "
                             "theoretical figure to measure it against")
        served = gpus or m.gpus  # type: ignore[attr-defined]
        if not served:
            raise TrackError(f"{where}: the file does not say how many GPUs served this "
                             "throughput; give --gpus N (the GPUs of the measured instance)")
        per_gpu = m.tps / served  # type: ignore[attr-defined]
        tef = per_gpu / theoretical
        index = number - 1
        plan = float(_line(result, scenario, "tef")[index])
        variance = tef - plan
        worth = (variance * float(_line(result, scenario, "theoretical_tokens")[index]) * sla
                 * float(_line(result, scenario, "sell_through")[index]) / 1e6
                 * float(_line(result, scenario, "price")[index]))
        source = ", ".join(Path(f).name for f in reading.files) + (
            f" (run {reading.run})" if reading.run else "")
        rows.append({"month": month, "model_month": number, "measured_tps": m.tps,  # type: ignore[attr-defined]
                     "gpus": served, "tps_per_gpu": per_gpu,
                     "theoretical_tps_per_gpu": theoretical, "tef_actual": tef,
                     "tef_plan": plan, "variance": variance, "revenue_worth": worth,
                     "scenario": scenario, "source": source,
                     "format": m.format, "fingerprint": reading.fingerprint})  # type: ignore[attr-defined]
    return rows


def _add_months(start: dt.date, months: int) -> dt.date:
    total = start.year * 12 + start.month - 1 + months
    return dt.date(total // 12, total % 12 + 1, 1)


def track(workbook: str | Path, files: Sequence[str], month: dt.date | None = None,
          gpus: int | None = None, interval_s: float | None = None) -> Tracked:
    """Append the measurements of ``files`` to the Actuals sheet of ``workbook`` (in place,
    atomically); raises :class:`TrackError` and writes nothing when a file or the workbook
    cannot be used."""
    import zipfile

    from ..files.disk import write_atomically
    from ..workbook.actuals_sheet import NotATrackableWorkbook, read_sheet, rewrite
    from .collect import collect

    path = Path(workbook)
    if not path.is_file():
        raise TrackError(f"{path}: no such workbook")
    try:
        with zipfile.ZipFile(path) as archive:
            sheet = read_sheet(archive)
    except (zipfile.BadZipFile, OSError):
        raise TrackError(f"{path}: is not an .xlsx workbook") from None
    except NotATrackableWorkbook as exc:
        raise TrackError(f"{path}: {exc}") from None
    (audit,) = collect([path])
    if not audit.included:
        errors = [f"{f.where}: {f.message}" for f in audit.findings if f.severity == "error"]
        raise TrackError(f"{path}: its inputs cannot be read, so nothing was written: "
                         + "; ".join(errors[:5]))
    inputs = audit.inputs
    readings = read_measurements(files, month, interval_s)
    known = sheet.fingerprints()
    fresh, already, seen = [], [], set()
    for reading in readings:
        if reading.fingerprint in known or reading.fingerprint in seen:
            row = known.get(reading.fingerprint)
            when = f"{row['month']:%Y-%m}" if row and isinstance(row.get("month"), dt.date) \
                else "this run"
            already.append((" + ".join(reading.files), when))
            continue
        seen.add(reading.fingerprint)
        fresh.append(reading)
    added = plan_rows(inputs, fresh, gpus)
    rows = sorted(sheet.rows + added, key=lambda r: (r["month"] or dt.date.min))  # type: ignore
    if added:
        data = rewrite(path.read_bytes(), rows, str(inputs["currency"]))
        write_atomically(path, data)
    return Tracked(path, tuple(added), tuple(already), tuple(rows), str(inputs["currency"]))
