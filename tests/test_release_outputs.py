"""The outputs are the release's, byte for byte: what the commands write for three sites
(``tests/data/release-sites.csv``, ``release-cohorts.csv``) with ``SOURCE_DATE_EPOCH`` fixed (the
template, each site's workbook, the portfolio workbook, its summary CSV and ``summary --json``)
against the committed record of the release's (``tests/data/release-<version>.json``, written by
``python tools/regenerate.py --accept-outputs``).

A workbook is compared member by member: its list of members in order, then each member's
uncompressed bytes (their SHA-256). The exact bytes hold on the platform the record names;
elsewhere numpy's vectorised functions give other last digits, so there the test of the exact
bytes is skipped, saying both platforms, and the texts are compared with every decimal number
masked. The Lite bundle is compared byte for byte with what its command builds in
``tests/test_generated.py``.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from tools import regenerate


@pytest.fixture(scope="module")
def release_outputs(tmp_path_factory) -> dict[str, bytes]:
    """What the commands write for the recorded sites, by name (built once per run)."""
    from tests.tools.once import build_once

    return build_once(tmp_path_factory, "release_outputs", regenerate.built_outputs)


@pytest.fixture(scope="module")
def built_record(release_outputs, tmp_path_factory) -> dict:
    """The record of ``release_outputs`` as ``--accept-outputs`` would write it (made once per
    run: each file's members hashed and masked)."""
    from tests.tools.once import build_once

    return build_once(tmp_path_factory, "release_record",
                      lambda folder: regenerate.output_record(release_outputs))


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(regenerate.release_record_path().read_text(encoding="utf-8"))


def _changed(data: bytes, member: str, old: bytes, new: bytes) -> bytes:
    """``data``, a zip, with the first ``old`` of ``member`` replaced by ``new``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            text = src.read(info)
            if info.filename == member:
                assert old in text, f"{old!r} not in {member}"
                text = text.replace(old, new, 1)
            dst.writestr(info, text)
    return out.getvalue()


def test_the_record_is_of_the_sites_the_outputs_are_built_from(release_outputs, record):
    sites = regenerate.RELEASE_SITES.read_text(encoding="utf-8").splitlines()[1:]
    workbooks = {f"batch/{line.split(',')[0]}.xlsx" for line in sites}
    assert len(workbooks) == 3
    expected = workbooks | {"TFOM.xlsx", "batch/portfolio.xlsx", "batch/summary.csv",
                            "summary.json"}
    assert set(release_outputs) == expected
    assert set(record["files"]) == expected
    from tokenfactory_xl import __version__

    assert record["release"] == __version__
    assert regenerate.release_record_path().name == f"release-{__version__}.json"


def test_every_output_is_the_release_s_byte_for_byte(built_record, record):
    here = regenerate.numeric_platform()
    if here != record["platform"]:
        pytest.skip(f"the record's exact bytes are of {record['platform']}; this is {here} "
                    "(its numbers' last digits differ): the texts are compared apart from them")
    found = regenerate.record_differences(built_record, record, exact=True)
    assert found == [], regenerate.release_report(found, record)


def test_every_output_is_the_release_s_apart_from_numbers_last_digits(built_record, record):
    found = regenerate.record_differences(built_record, record, exact=False)
    assert found == [], regenerate.release_report(found, record)


def test_a_changed_member_is_named_with_how_to_accept_it(release_outputs, record, monkeypatch):
    monkeypatch.setattr(regenerate, "numeric_platform", lambda: record["platform"])
    outputs = dict(release_outputs)
    name = "batch/Oslo B200 (owned).xlsx"
    # the Cover's build date (14 November 2023 as a serial day), one day later
    outputs[name] = _changed(outputs[name], "xl/worksheets/sheet1.xml", b"<v>45244.0</v>",
                             b"<v>45245.0</v>")
    found = regenerate.record_differences(regenerate.output_record(outputs), record, exact=True)
    assert found == [f"{name}: member xl/worksheets/sheet1.xml differs"]
    report = regenerate.release_report(found, record)
    assert f"release {record['release']}'s" in report
    assert "python tools/regenerate.py --accept-outputs" in report
    assert f"tests/data/release-{record['release']}.json" in report


def test_without_exact_bytes_a_last_digit_passes_and_a_changed_text_does_not(release_outputs,
                                                                             record):
    outputs = dict(release_outputs)
    name, member = "batch/Frankfurt H100 (owned).xlsx", "xl/worksheets/sheet2.xml"
    with zipfile.ZipFile(io.BytesIO(outputs[name])) as z:
        text = z.read(member)
    number = regenerate.DECIMAL.search(text, text.index(b"<v>")).group()
    assert b"." in number
    outputs[name] = _changed(outputs[name], member, number, number[:-1] +
                             (b"1" if number[-1:] != b"1" else b"2"))
    got = regenerate.output_record(outputs)
    assert regenerate.record_differences(got, record, exact=False) == []
    assert regenerate.record_differences(got, record, exact=True) == [
        f"{name}: member {member} differs"]
    outputs[name] = _changed(outputs[name], member, b"<f>", b"<f>1+")
    assert regenerate.record_differences(regenerate.output_record(outputs), record,
                                         exact=False) == [f"{name}: member {member} differs"]


def test_members_added_removed_or_reordered_and_files_changed_are_named(release_outputs,
                                                                        record):
    outputs = dict(release_outputs)
    outputs["summary.json"] = outputs["summary.json"].replace(b'"npv"', b'"NPV"', 1)
    name = "batch/portfolio.xlsx"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(outputs[name])) as src, zipfile.ZipFile(out, "w") as dst:
        infos = src.infolist()
        for info in infos[1:] + infos[:1]:  # the first member last
            dst.writestr(info, src.read(info))
    outputs[name] = out.getvalue()
    del outputs["batch/summary.csv"]
    outputs["batch/extra.csv"] = b"site_name\n"
    found = regenerate.record_differences(regenerate.output_record(outputs), record, exact=True)
    members = [m["name"] for m in record["files"][name]["members"]]
    assert found == ["batch/summary.csv: not written (the record has it)",
                     "batch/extra.csv: written, not in the record",
                     f"{name}: members in another order (member 1 is {members[1]}, was "
                     f"{members[0]})",
                     "summary.json: differs"]


def test_accepting_the_outputs_writes_this_release_s_record_and_drops_the_old(
        release_outputs, built_record, tmp_path, monkeypatch):
    from tokenfactory_xl import __version__

    data = tmp_path / "tests" / "data"
    data.mkdir(parents=True)
    (data / "release-3.0.0.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(regenerate, "ROOT", tmp_path)
    monkeypatch.setattr(regenerate, "built_outputs", lambda folder: release_outputs)
    written = regenerate.accept_outputs()
    assert [p.name for p in data.iterdir()] == [f"release-{__version__}.json"]
    assert regenerate.release_record_path() == written
    record = json.loads(written.read_text(encoding="utf-8"))
    assert record == built_record
    assert record["source_date_epoch"] == 1_700_000_000
    members = sum(len(f.get("members", ())) for f in record["files"].values())
    lines = written.read_text(encoding="utf-8").splitlines()
    assert sum(line.lstrip().startswith('{"name": ') for line in lines) == members > 100
