"""The fleet block (methodology §4.1, §10.1, §10.2): one column per cohort (cohort 1 is the
site's own GPUs, cohorts 2–8 the fleet inputs), the fleet's totals, and each scenario's
figures of a cohort (its last month, whether it is bought, what it fetches when sold and
what it still owes); with the sums over the cohorts in service that the monthly lines use.
"""

from __future__ import annotations

from ..formula import (
    IF,
    INDEX,
    LEN,
    MAX,
    MIN,
    ROUND,
    SUM,
    SUMPRODUCT,
    Cell,
    Expr,
    InputRef,
    Line,
    Num,
    Position,
    Row,
)
from .common import ALL_SCENARIOS, COHORTS, C, I, K, N, Scenario, _given, _s_input, _scalar


# -- the fleet block: one column per cohort (methodology §4.1) -----------------------------------
def _cohort_number(field: str, site: Expr) -> Expr:
    """Cohort k ≥ 2's number in the fleet block, or the site's own value when left blank."""
    typed = INDEX(InputRef(f"fleet_{field}"), 1, Position() - 1)
    return IF(_given(typed), typed, site)


def _fleet(name, label, unit, kind, formula, note="", first=None) -> Line:
    return Line(f"c_{name}", label, unit, kind, formula, table=COHORTS, first=first, note=note)


_OWN_TYPED = INDEX(InputRef("fleet_ownership"), 1, Position() - 1)


FLEET: tuple[Line, ...] = (
    _fleet("number", "Cohort", "", "integer", Position()),
    _fleet("gpus", "GPUs", "GPUs", "gpus",
           IF(_given(INDEX(InputRef("fleet_gpus"), 1, Position() - 1)),
              INDEX(InputRef("fleet_gpus"), 1, Position() - 1), 0),
           "0 for an empty column", first=I.gpus),
    _fleet("online", "Online month", "month", "integer", _cohort_number("online_month", 1),
           "cohort 1: month 1", first=Num(1)),
    _fleet("last", "Last month planned in service", "month", "integer",
           IF(_given(INDEX(InputRef("fleet_retire_month"), 1, Position() - 1)),
              MIN(INDEX(InputRef("fleet_retire_month"), 1, Position() - 1), I.horizon_months),
              I.horizon_months),
           "retire month, or the horizon when blank or later",
           first=IF(_given(I.retire_month), MIN(I.retire_month, I.horizon_months),
                    I.horizon_months)),
    _fleet("owned", "Owned (1) or rented (0)", "flag", "flag",
           IF(LEN(_OWN_TYPED).eq(0), N.owned_flag, IF(_OWN_TYPED.eq("own"), 1, 0)),
           first=N.owned_flag),
    _fleet("capex_per_gpu", "CapEx per GPU", "money/GPU", "money",
           _cohort_number("capex_per_gpu", I.capex_per_gpu), first=I.capex_per_gpu),
    _fleet("salvage_per_gpu", "Salvage per GPU", "money/GPU", "money",
           _cohort_number("salvage_per_gpu", I.salvage_per_gpu), first=I.salvage_per_gpu),
    _fleet("life_years", "Depreciation life", "years", "factor",
           _cohort_number("life_years", I.life_years), first=I.life_years),
    _fleet("rent_per_gpu_hour", "Rent per GPU-hour", "money/GPU-h", "price",
           _cohort_number("rent_per_gpu_hour", I.rent_per_gpu_hour),
           first=I.rent_per_gpu_hour),
    _fleet("power_kw_per_gpu", "Power per GPU", "kW", "factor",
           _cohort_number("power_kw_per_gpu", I.power_kw_per_gpu), first=I.power_kw_per_gpu),
    _fleet("tps_per_gpu", "Theoretical TPS per GPU", "tokens/s", "tokens",
           _cohort_number("theoretical_tps_per_gpu", N.site_tps_per_gpu),
           first=N.site_tps_per_gpu),
    _fleet("dep_months", "Depreciation months", "months", "integer",
           ROUND(C.c_life_years * K.months_per_year, 0), "ROUND(12 × life)"),
    _fleet("capex", "CapEx", "money", "money", C.c_owned * C.c_gpus * C.c_capex_per_gpu,
           "paid the month before the cohort comes online; 0 when rented"),
    _fleet("dep_per_month", "Depreciation per month", "money", "money",
           C.c_owned * C.c_gpus * (C.c_capex_per_gpu - C.c_salvage_per_gpu) / C.c_dep_months),
    _fleet("loan", "Debt drawn", "money", "money", I.debt_share * C.c_capex,
           "debt share × CapEx, drawn when the CapEx is paid"),
    _fleet("draw_month", "Drawdown month", "month", "integer", C.c_online - 1),
    _fleet("deposit_month", "Deposit month", "month", "integer",
           MAX(0, C.c_draw_month - I.capex_lead_months),
           "the deposit share of the CapEx is paid then, never before month 0"),
    _fleet("tax_months", "Tax depreciation months", "months", "integer",
           IF(_given(I.tax_life_years), ROUND(I.tax_life_years * K.months_per_year, 0),
              C.c_dep_months), "ROUND(12 × tax life); blank tax life: the book months"),
    _fleet("tax_dep_per_month", "Tax depreciation per month", "money", "money",
           C.c_owned * C.c_gpus * (C.c_capex_per_gpu - C.c_salvage_per_gpu) / C.c_tax_months),
    _fleet("payment", "Annuity payment", "money/month", "money",
           IF(N.debt_monthly_rate.eq(0), C.c_loan / I.debt_tenor_months,
              C.c_loan * N.debt_monthly_rate / (1 - 1 / N.debt_growth)),
           "D × i ÷ (1 − (1 + i)^−n); D ÷ n at rate 0"),
    _fleet("kw", "Facility power", "kW", "factor", C.c_gpus * C.c_power_kw_per_gpu * I.pue,
           "GPUs × kW × PUE"),
)

FLEET_SCALARS: tuple[Line, ...] = (
    _scalar("fleet_gpus", "GPUs of all cohorts", "GPUs", "gpus", SUM(Row("c_gpus")),
            "the planned fleet"),
    _scalar("fleet_equivalent", "Fleet in cohort-1 GPUs of equal throughput", "GPUs", "gpus",
            SUMPRODUCT(Row("c_gpus"), Row("c_tps_per_gpu")) / N.site_tps_per_gpu,
            "Σ GPUs × theoretical TPS per GPU ÷ cohort 1's"),
    _scalar("owned_gpus", "Owned GPUs", "GPUs", "gpus", SUMPRODUCT(Row("c_gpus"), Row("c_owned"))),
    _scalar("owned_capex", "CapEx of owned cohorts", "money", "money", SUM(Row("c_capex"))),
    _scalar("rented_gpus", "Rented GPUs", "GPUs", "gpus", N.fleet_gpus - N.owned_gpus),
    _scalar("rented_rent", "Rent of rented cohorts per hour", "money/h", "money",
            SUMPRODUCT(Row("c_gpus"), Row("c_rent_per_gpu_hour"), 1 - Row("c_owned"))),
)


def _in_service(month: Expr, k: str) -> Expr:
    """1 where a cohort is in service in ``month`` in scenario ``k`` (its online month … its
    last month in the scenario; a cohort never bought has its last month before its first)."""
    return (Row("c_online") <= month) * (Row(f"c_last_{k}") >= month)


def _owed(month: Expr, held: Expr) -> Expr:
    """Σ over loans of what is owed after ``month``'s payment, of the cohorts where ``held``
    (a row of flags) is 1: k = month − drawdown month payments made, D × ((1 + i)^n −
    (1 + i)^k) ÷ ((1 + i)^n − 1) for 0 ≤ k < n (D × (n − k) ÷ n at rate 0), nothing before the
    drawdown or after the last payment."""
    k = month - Row("c_draw_month")
    open_loans = Row("c_loan") * held * (k >= 0) * (k < I.debt_tenor_months)
    return IF(N.debt_monthly_rate.eq(0),
              SUMPRODUCT(open_loans * (I.debt_tenor_months - k)) / I.debt_tenor_months,
              SUMPRODUCT(open_loans * (N.debt_growth - (1 + N.debt_monthly_rate) ** k))
              / (N.debt_growth - 1))


def fleet_scenario_lines(sc: Scenario) -> tuple[Line, ...]:
    """The cohorts' figures that depend on a scenario (methodology §10.1, §10.2): each cohort's
    last month (its retire month, or the scenario's shutdown month if earlier), whether it is
    bought at all, and what it fetches when sold."""
    k = sc.key
    shutdown = _s_input("shutdown_month", sc)

    def cohort(name, label, unit, kind, formula, note="") -> Line:
        return Line(f"c_{name}_{k}", f"{label} · {sc.name}", unit, kind, formula,
                    table=COHORTS, note=note, meta={"line": f"c_{name}", "scenario": sc.name})

    last, life_left = Cell(f"c_last_{k}"), Cell(f"c_dep_left_{k}")
    tax_left = Cell(f"c_tax_left_{k}")
    above_salvage = C.c_capex_per_gpu - C.c_salvage_per_gpu
    market_price = MAX(C.c_salvage_per_gpu,
                       C.c_capex_per_gpu * I.residual_share
                       * (1 - _s_input("resale_decline_per_quarter", sc))
                       ** ((last - C.c_online + 1) / K.months_per_quarter))
    book_price = C.c_salvage_per_gpu + above_salvage * life_left / C.c_dep_months
    paid = last - C.c_draw_month  # annuity payments made by the last month
    return (
        cohort("last", "Last month in service", "month", "integer",
               IF(_given(shutdown), MIN(C.c_last, shutdown), C.c_last),
               "the retire month, or the shutdown month if earlier"),
        cohort("bought", "Bought (1) or not (0)", "flag", "flag",
               IF(C.c_online <= last, 1, 0), "a cohort due online after the shutdown is not"),
        cohort("dep_left", "Depreciation months left when sold", "months", "integer",
               MAX(0, C.c_online + C.c_dep_months - 1 - last)),
        cohort("book_value", "Net book value when sold", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus * book_price),
        cohort("tax_left", "Tax depreciation months left when sold", "months", "integer",
               MAX(0, C.c_online + C.c_tax_months - 1 - last)),
        cohort("tax_value", "Tax written-down value when sold", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus
               * (C.c_salvage_per_gpu + above_salvage * tax_left / C.c_tax_months)),
        cohort("proceeds", "Disposal proceeds", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus
               * IF(I.residual_method.eq("market"), market_price,
                    C.c_salvage_per_gpu + above_salvage * life_left / C.c_dep_months
                    * I.residual_share),
               "market: MAX(salvage, CapEx × residual share × (1 − resale decline)^(quarters "
               "held)); book: salvage + undepreciated value above it × residual share"),
        cohort("exit_owed", "Debt owed after its last month's payment", "money", "money",
               Cell(f"c_bought_{k}") * IF(paid >= I.debt_tenor_months, 0, IF(
                   N.debt_monthly_rate.eq(0),
                   C.c_loan * (I.debt_tenor_months - paid) / I.debt_tenor_months,
                   C.c_loan * (N.debt_growth - (1 + N.debt_monthly_rate) ** paid)
                   / (N.debt_growth - 1))),
               "prepaid from the proceeds when the cohort is sold (repaid at H if held)"),
    )


FLEET_SCENARIO: dict[str, tuple[Line, ...]] = {
    sc.key: fleet_scenario_lines(sc) for sc in ALL_SCENARIOS}
