// Reads an .xlsx with exceljs and with SheetJS (the npm package "xlsx") and prints, as JSON,
// every stored cell value each of them sees: {"exceljs": {sheet: {coord: value}}, "sheetjs": …}.
// A formula cell gives its stored result. Usage: node read_xlsx.js FILE
const fs = require("fs");
const ExcelJS = require("exceljs");
const XLSX = require("xlsx");

function plain(value) {
  if (value instanceof Date) return { date: value.toISOString() };
  if (value && typeof value === "object") {
    if ("result" in value) return plain(value.result);  // a formula's stored result
    if ("error" in value) return { error: value.error };
    if ("richText" in value) return value.richText.map((r) => r.text).join("");
    if ("text" in value) return value.text;
    return null;
  }
  return value;
}

async function main() {
  const file = process.argv[2];
  const out = { exceljs: {}, sheetjs: {} };
  const book = new ExcelJS.Workbook();
  await book.xlsx.readFile(file);
  book.eachSheet((ws) => {
    const cells = (out.exceljs[ws.name] = {});
    ws.eachRow({ includeEmpty: false }, (row) => {
      row.eachCell({ includeEmpty: false }, (cell) => {
        // a formula's stored result: cell.result (cell.value leaves out a result of 0)
        const formula = cell.type === ExcelJS.ValueType.Formula;
        cells[cell.address] = plain(formula ? cell.result : cell.value);
      });
    });
  });
  const wb = XLSX.read(fs.readFileSync(file), { type: "buffer", cellDates: true });
  for (const name of wb.SheetNames) {
    const ws = wb.Sheets[name];
    const cells = (out.sheetjs[name] = {});
    for (const coord of Object.keys(ws)) {
      if (coord[0] === "!") continue;
      const cell = ws[coord];
      cells[coord] = cell.t === "e" ? { error: cell.w } : plain(cell.v);
    }
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
});
