"""Fixtures of the workbook tests: the input sets, their workbooks, and two engines' values.

The input sets cover an owned and a rented fleet, all three scenarios, a 7-month horizon and a
leap-year February start (2028-02-01: month 1 has 29 days), on top of the template's defaults.
Each input set's workbook is the one ``batch`` writes for that site (the kept workbook factory:
the same formulas as the builder's, with the site's inputs and every formula's stored value).
LibreOffice recalculates the workbooks a few at a time, each once per run, computing every
formula again whatever the file stores; the ``formulas`` package compiles the template once and
recomputes it for each input set.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from pathlib import Path

import pytest

from tests.tools.once import BuiltInGroups
from tokenfactory_xl.tfom.inputs import make_inputs

INPUT_SETS: dict[str, dict[str, object]] = {
    "template": {},
    "rented_optimised": {"ownership": "rent", "scenario": "Optimised", "gpus": 2048,
                         "rent_per_gpu_hour": 1.6, "fixed_opex_per_month": 40_000},
    "downside_7_months": {"scenario": "Downside", "horizon_months": 7, "salvage_per_gpu": 6_000,
                          "tef_ramp_months": 0, "tax_rate": 0.3, "discount_rate": 0.12},
    "leap_february_120": {"start_date": "2028-02-01", "horizon_months": 120,
                          "sell_through_ramp_months": 0, "decline_per_quarter": 0.04,
                          "life_years": 5, "salvage_per_gpu": 2_500, "measured_tps": 2_000_000},
    "optimised_owned_short": {"scenario": "Optimised", "horizon_months": 30, "gpus": 64,
                              "measured_tps": 160_000,
                              "capex_per_gpu": 25_000, "cache_hit_rate": 0.8,
                              "ttft_slo_ms": 900, "tef_target.Optimised": 0.9},
    # version 2: a second and a rented third cohort, a contract, a demand-limited market,
    # debt, a programme cost, a retirement and a partial first calendar year
    "cohorts_contract_debt": {
        "start_date": "2027-07-01", "horizon_months": 72, "retire_month": 60,
        "salvage_per_gpu": 4_000, "residual_share": 0.6, "contract_mtok_per_month": 3_000_000,
        "contract_price_per_mtok": 0.2, "contract_months": 24, "market_mtok_month1": 4_000_000,
        "debt_share": 0.6, "debt_rate": 0.07, "debt_tenor_months": 36,
        "programme_cost_once.Optimised": 500_000, "programme_fee_per_month.Optimised": 20_000,
        "cohorts": [
            {"cohort": "B200 2028", "online_month": 13, "gpus": 512, "capex_per_gpu": 55_000,
             "theoretical_tps_per_gpu": 25_000, "life_years": 5},
            {"cohort": "Rented burst", "online_month": 7, "retire_month": 30, "gpus": 256,
             "ownership": "rent", "rent_per_gpu_hour": 2.4}]},
    # version 3: a shutdown per scenario (a cohort due after the Downside's is never bought),
    # loans prepaid on disposal, the market exit with its own resale decline, a demand limit
    "v3_shutdown_prepaid_debt": {
        "shutdown_month.Downside": 24, "shutdown_month.Optimised": 40,
        "resale_decline_per_quarter.Base": 0.12, "salvage_per_gpu": 1_500,
        "debt_share": 0.5, "debt_rate": 0.07, "debt_tenor_months": 36,
        "market_mtok_month1": 3_000_000, "fixed_opex_per_month": 50_000,
        "programme_fee_per_month.Optimised": 10_000, "start_date": "2027-03-01",
        "cohorts": [{"cohort": "late", "online_month": 30, "gpus": 256}]},
    # version 3's financing: escalation, working capital, deposits paid ahead, a tax life of
    # its own, debt, a Downside shutdown that releases working capital before H, a late cohort
    "v3_financing_statements": {
        "power_escalation_per_year": 0.04, "opex_escalation_per_year": 0.03,
        "receivable_days": 45, "payable_days": 20, "capex_deposit_share": 0.3,
        "capex_lead_months": 4, "tax_life_years": 3, "dscr_covenant": 1.4,
        "debt_share": 0.6, "debt_rate": 0.06, "debt_tenor_months": 30,
        "shutdown_month.Downside": 30, "start_date": "2027-05-01", "horizon_months": 54,
        "programme_fee_per_month.Optimised": 15_000, "fixed_opex_per_month": 30_000,
        "cohorts": [{"cohort": "late", "online_month": 9, "gpus": 128, "capex_per_gpu": 50_000}]},
    # a Downside that sells nothing, live: a margin on no revenue and a cost per Mtok of no
    # tokens have no meaning ("n/m"), nor the Years sheet's margins
    "nothing_sold_downside": {
        "scenario": "Downside", "horizon_months": 24, "sell_through_start": 0,
        "sell_through_target.Downside": 0},
    "debt_at_zero_rate_prefill_decode": {
        "debt_share": 0.9, "debt_rate": 0, "debt_tenor_months": 120, "horizon_months": 40,
        "prefill_tps_per_gpu": 30_000, "decode_tps_per_gpu": 6_000, "measured_tps": 2_500_000,
        "cohorts": [{"cohort": "2", "online_month": 40, "gpus": 8}]},
}


#: Monte Carlo draws of the workbooks built here. The Risk sheet's figures are values that no
#: formula computes: a few hundred draws give the sheet the same cells and formulas as the 10,000
#: of a template (which ``test_committed_template_is_current`` holds to its bytes), in a
#: fiftieth of the time.
RISK_DRAWS = 200


@pytest.fixture(scope="session")
def input_sets():
    """Name → checked site inputs."""
    return {name: make_inputs(values) for name, values in INPUT_SETS.items()}


#: The template's workbook with the stored value of ``STALE_NAME``'s cell wrong on purpose,
#: recalculated with the others: LibreOffice must show the computed value, not the stored one.
STALE = "template_stale_value"
STALE_NAME = "out_npv"
STALE_VALUE = "0.123456"


def with_stored_value(path: Path, name: str, value: str) -> None:
    """Overwrite, in the xlsx file at ``path``, the stored value of the formula cell the
    defined name ``name`` points at with the number ``value``."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        ((sheet, ref),) = book.defined_names[name].destinations
        part = f"xl/worksheets/sheet{book.sheetnames.index(sheet) + 1}.xml"
    finally:
        book.close()
    cell = re.compile(rb'(<c r="' + ref.replace("$", "").encode() + rb'"[^>]*>\s*<f>[^<]*</f>'
                      rb'\s*<v>)([^<]*)(</v>)')
    with zipfile.ZipFile(path) as zin:
        parts = [(info, zin.read(info)) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info, body in parts:
            if info.filename == part:
                body, count = cell.subn(rb"\g<1>" + value.encode() + rb"\g<3>", body)
                assert count == 1, f"no stored value of {name} at {sheet}!{ref}"
            zout.writestr(info, body)


#: Input sets LibreOffice recalculates in one call. Starting it costs about a second of CPU,
#: so one call for all would be cheapest; four workbooks a call keep the wait of the test that
#: first needs one of them to about a third of that.
RECALCULATED_TOGETHER = 4


@pytest.fixture(scope="session")
def recalculated(soffice, tmp_path_factory, input_sets) -> BuiltInGroups[Path]:
    """Name → the workbook of that input set, as ``batch`` writes it with ``RISK_DRAWS``
    draws, recalculated and saved by LibreOffice; made a group of input sets at a time
    (tests/tools/once.py)."""
    from tokenfactory_xl.engines.libreoffice import recalculate
    from tokenfactory_xl.portfolio.batch import shared_factory

    def build(names: list[str], folder: Path) -> dict[str, Path]:
        books = []
        for name in names:
            path = folder / f"{name}.xlsx"
            if name == STALE:
                path.write_bytes(shared_factory().make(input_sets["template"], RISK_DRAWS)[0])
                with_stored_value(path, STALE_NAME, STALE_VALUE)
            else:
                path.write_bytes(shared_factory().make(input_sets[name], RISK_DRAWS)[0])
            books.append(path)
        return dict(zip(names, recalculate(books, folder / "recalculated"), strict=True))

    names = [*input_sets, STALE]
    groups = [names[k:k + RECALCULATED_TOGETHER]
              for k in range(0, len(names), RECALCULATED_TOGETHER)]
    return BuiltInGroups(tmp_path_factory, "workbook-recalculated", groups, build)


def excel_serial(value: dt.date) -> int:
    """The spreadsheet serial number of a date (1900 date system)."""
    return (dt.date(value.year, value.month, value.day) - dt.date(1899, 12, 30)).days
