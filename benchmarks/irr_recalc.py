"""What the workbook's own IRR searches cost a user in a spreadsheet: LibreOffice's hard
recalculation of the 120-month template against the same template with its IRR sheet frozen.

In one LibreOffice process (headless, a private profile that keeps stored values on load):

1. ``template --set horizon_months=120`` as built;
2. the same file with every formula of the IRR sheet removed, its stored values kept (the IRR
   sheet frozen: the rest of the workbook reads the same IRRs, none is searched for).

Each is loaded once, then ``calculateAll()`` (every formula recomputed, as Ctrl+Alt+Shift+F9
does) runs ``--repeat`` times on each, the two taking turns; the figure is the median of the
clock times measured inside LibreOffice (``GetSystemTicks``, milliseconds), so a busy moment of
a shared machine costs one run, not the figure. Goal (version 3): the template at most 1.5 ×
the frozen one. Usage::

    python benchmarks/irr_recalc.py              # 7 recalculations of each
    python benchmarks/irr_recalc.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL = 1.5

_RECALC_NEVER = """<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop \
oor:name="OOXMLRecalcMode" oor:op="fuse"><value>1</value></prop></item>
"""
_ONE_THREAD = """<item oor:path="/org.openoffice.Office.Calc/Formula/Calculation"><prop \
oor:name="UseThreadedCalculationForFormulaGroups" oor:op="fuse"><value>false</value></prop></item>
"""

_MODULE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" \
script:language="StarBasic">Sub Main
  Dim props(0) As New com.sun.star.beans.PropertyValue
  props(0).Name = "Hidden"
  props(0).Value = True
  Dim docs(1) As Object
  docs(0) = StarDesktop.loadComponentFromURL(ConvertToURL("{live}"), "_blank", 0, props())
  docs(1) = StarDesktop.loadComponentFromURL(ConvertToURL("{frozen}"), "_blank", 0, props())
  n = FreeFile
  Open "{out}" For Output As #n
  For i = 1 To {repeat}
    For j = 0 To 1
      t = GetSystemTicks()
      docs(j).calculateAll()
      Print #n, j &amp; " " &amp; (GetSystemTicks() - t)
    Next j
  Next i
  Close #n
  docs(0).close(True)
  docs(1).close(True)
  StarDesktop.terminate()
End Sub
</script:module>
"""


def freeze_sheet(source: Path, target: Path, sheet: str) -> int:
    """Copy ``source`` to ``target`` with every formula of ``sheet`` removed and its stored
    values kept; returns how many formulas were removed."""
    with zipfile.ZipFile(source) as z:
        names = z.namelist()
        book = z.read("xl/workbook.xml").decode()
        rels = z.read("xl/_rels/workbook.xml.rels").decode()
        rid = re.search(rf'<sheet [^>]*name="{re.escape(sheet)}"[^>]*r:id="([^"]+)"', book)[1]
        rel = next(r for r in re.findall(r"<Relationship [^>]*>", rels) if f'Id="{rid}"' in r)
        part = "xl/" + re.search(r'Target="/?(?:xl/)?([^"]+)"', rel)[1]
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            removed = 0
            for name in names:
                data = z.read(name)
                if name == part:
                    text, removed = re.subn(r"<f>[^<]*</f>|<f [^>]*/>|<f [^>]*>[^<]*</f>", "",
                                            data.decode())
                    data = text.encode()
                out.writestr(name, data)
    return removed


def recalculate(live: Path, frozen: Path, repeat: int, folder: Path, threads: bool
                ) -> dict[int, list[int]]:
    """Milliseconds of each ``calculateAll()`` of the two workbooks (0: live, 1: frozen), with
    LibreOffice's threaded calculation of formula groups on or off."""
    profile = [f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless",
               "--norestore", "--nologo"]
    env = {**os.environ, "HOME": str(folder)}
    # a first start makes the profile and its Basic library Standard, then the macro goes in
    subprocess.run(["soffice", *profile, "--terminate_after_init"], check=True,
                   capture_output=True, timeout=600, env=env)
    user = folder / "profile" / "user"
    settings = user / "registrymodifications.xcu"  # stored values kept on load
    settings.write_text(settings.read_text(encoding="utf-8").replace(
        "</oor:items>", _RECALC_NEVER + ("" if threads else _ONE_THREAD) + "</oor:items>"),
        encoding="utf-8")
    out = folder / "times.txt"
    (user / "basic" / "Standard" / "Module1.xba").write_text(
        _MODULE.format(live=live, frozen=frozen, out=out, repeat=repeat), encoding="utf-8")
    subprocess.run(["soffice", *profile,
                    "vnd.sun.star.script:Standard.Module1.Main?language=Basic&location=application"],
                   check=True, capture_output=True, timeout=120 + 20 * repeat, env=env)
    times: dict[int, list[int]] = {0: [], 1: []}
    for row in out.read_text().split("\n"):
        if row.strip():
            which, ms = row.split()
            times[int(which)].append(int(ms))
    if len(times[0]) != repeat or len(times[1]) != repeat:
        raise SystemExit(f"LibreOffice measured {times}, not {repeat} runs of each")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="recalculations of each")
    args = parser.parse_args()
    from tokenfactory_xl.workbook.build import IRR_SHEET

    results = []
    with tempfile.TemporaryDirectory(prefix="tfxl-irr-") as tmp:
        folder = Path(tmp)
        live, frozen = folder / "live.xlsx", folder / "frozen.xlsx"
        subprocess.run([sys.executable, "-m", "tokenfactory_xl", "template", "-o", str(live),
                        "--set", "horizon_months=120", "--force"], check=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
        removed = freeze_sheet(live, frozen, IRR_SHEET)
        for threads in (True, False):
            run = folder / ("threads" if threads else "one-thread")
            run.mkdir()
            results.append((threads, recalculate(live, frozen, args.repeat, run, threads)))
    load = os.getloadavg()[0]
    print(f"LibreOffice calculateAll() of the 120-month template, median of {args.repeat} runs "
          f"of each, milliseconds by the clock; {os.cpu_count()} cores, load average "
          f"{load:.1f} (the machine may be shared); {removed:,} formulas on the IRR sheet")
    print(f"{'threaded calculation':22}{'as built':>10}{'IRR frozen':>12}{'ratio':>8}")
    for threads, times in results:
        a, b = (statistics.median(times[k]) for k in (0, 1))
        print(f"{'on (the default)' if threads else 'off (one core)':22}{a:10.0f}{b:12.0f}"
              f"{a / b:7.2f}x   (goal: at most {GOAL}x; runs {times[0]} and {times[1]})")


if __name__ == "__main__":
    main()
