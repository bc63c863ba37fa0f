"""Fixtures of the workbook tests: the input sets, their workbooks, and two engines' values.

The input sets cover an owned and a rented fleet, all three scenarios, a 7-month horizon and a
leap-year February start (2028-02-01: month 1 has 29 days), on top of the template's defaults.
LibreOffice recalculates all the workbooks in one call; the ``formulas`` package compiles the
template once and recomputes it for each input set.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tokenfactory_xl import workbook as wb_module
from tokenfactory_xl.inputs import make_inputs

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
}


@pytest.fixture(scope="session")
def input_sets():
    """Name → checked site inputs."""
    return {name: make_inputs(values) for name, values in INPUT_SETS.items()}


@pytest.fixture(scope="session")
def built(tmp_path_factory, input_sets) -> dict[str, Path]:
    """Name → a workbook built with that input set."""
    folder = tmp_path_factory.mktemp("built")
    out = {}
    for name, inputs in input_sets.items():
        path = folder / f"{name}.xlsx"
        wb_module.save_workbook(wb_module.build_workbook(inputs), path)
        out[name] = path
    return out


@pytest.fixture(scope="session")
def recalculated(soffice, tmp_path_factory, built) -> dict[str, Path]:
    """Name → the workbook as LibreOffice recalculated and saved it (one soffice call)."""
    from tokenfactory_xl.libreoffice import recalculate

    folder = tmp_path_factory.mktemp("recalculated")
    names = list(built)
    paths = recalculate([built[n] for n in names], folder)
    return dict(zip(names, paths, strict=True))


def excel_serial(value: dt.date) -> int:
    """The spreadsheet serial number of a date (1900 date system)."""
    return (dt.date(value.year, value.month, value.day) - dt.date(1899, 12, 30)).days
