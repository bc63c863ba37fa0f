<#
.SYNOPSIS
    Installs the Token Factory Excel functions (=TEF(), =TFI(), =BREAKEVEN_UTIL() ...) for
    desktop Excel on Windows, through the free xlwings add-in.

.DESCRIPTION
    1. pip-installs tokenfactory_xl (and with it xlwings) into the Python you name;
    2. installs the xlwings Excel add-in (xlwings addin install);
    3. copies xlwings' macro-enabled starter workbook (it already references the add-in) to
       -Workbook, unless that file exists;
    4. sets that workbook's own xlwings settings (its xlwings.conf sheet): tokenfactory_xl.udfs
       as a UDF module (modules already listed stay) and, as its interpreter (Interpreter_Win),
       the pythonw.exe of the Python given with -Python, the one the package went into. Other
       xlwings workbooks and the user-wide %USERPROFILE%\.xlwings\xlwings.conf are not touched.
    Then one step in Excel remains, printed at the end: allow "Trust access to the VBA project
    object model" once, open the workbook and click Import Functions on the xlwings tab.

    Quit Excel before running this script. Nothing here needs administrator rights.

.PARAMETER Package
    What pip installs: a wheel file, a source folder, or a package name. Defaults to the
    repository this script sits in when run from a clone, otherwise "tokenfactory-xl".

.PARAMETER Python
    The Python interpreter to install into (default: python on the PATH); the workbook runs
    the functions with it.

.PARAMETER Workbook
    Where to put the starter workbook (default: Documents\TokenFactory.xlsm).

.EXAMPLE
    powershell -ExecutionPolicy Bypass -File install\windows\install.ps1

.EXAMPLE
    powershell -ExecutionPolicy Bypass -File install\windows\install.ps1 -Python C:\Python312\python.exe
#>
[CmdletBinding()]
param(
    [string]$Package = "",
    [string]$Python = "python",
    [string]$Workbook = (Join-Path ([Environment]::GetFolderPath("MyDocuments")) "TokenFactory.xlsm")
)

$ErrorActionPreference = "Stop"
$UdfModule = "tokenfactory_xl.udfs"

function Invoke-Python([string[]]$Arguments) {
    & $Python @Arguments
    if ($LASTEXITCODE -ne 0) {
        throw "'$Python $($Arguments -join ' ')' failed (exit code $LASTEXITCODE)."
    }
}

if (-not $Package) {
    $repository = Resolve-Path (Join-Path $PSScriptRoot "..\..")
    if (Test-Path (Join-Path $repository "pyproject.toml")) { $Package = "$repository" }
    else { $Package = "tokenfactory-xl" }
}

Write-Host "== 1/4 Installing $Package with $Python"
Invoke-Python @("-m", "pip", "install", "--upgrade", $Package)

Write-Host "== 2/4 Installing the xlwings Excel add-in"
Invoke-Python @("-m", "xlwings.cli", "addin", "install")

Write-Host "== 3/4 Starter workbook"
if (Test-Path $Workbook) {
    Write-Host "   $Workbook exists: kept (its settings are set in step 4)."
} else {
    $template = & $Python -c "import os, xlwings; print(os.path.join(os.path.dirname(xlwings.__file__), 'quickstart.xlsm'))"
    if ($LASTEXITCODE -ne 0) { throw "Could not find xlwings' starter workbook." }
    Copy-Item $template.Trim() $Workbook
    Write-Host "   Created $Workbook (macro-enabled, references the xlwings add-in)."
}

Write-Host "== 4/4 Setting the workbook's UDF module and interpreter"
# The interpreter is the Python the package was installed into, as it names itself: the add-in
# would otherwise start whatever pythonw comes first on the PATH. The merge (keep every other
# setting, add to the modules already listed) is a small Python script next to this one, so the
# same logic is tested on every platform.
$interpreter = (& $Python -c "import sys; print(sys.executable)").Trim()
if ($LASTEXITCODE -ne 0) { throw "'$Python' did not say where it is." }
Invoke-Python @((Join-Path $PSScriptRoot "register_udf_module.py"), $Workbook, $UdfModule,
                "--interpreter", $interpreter)

Write-Host @"

Done. One step in Excel remains (once per computer, then once per workbook):
  1. Excel: File > Options > Trust Center > Trust Center Settings... > Macro Settings:
     tick "Trust access to the VBA project object model", then OK.
  2. Open $Workbook (or any .xlsm workbook whose VBA project references xlwings:
     Alt+F11 > Tools > References... > tick xlwings), enable macros if asked.
  3. On the xlwings tab of the ribbon, click "Import Functions".
Type =TEF(210000, 700000) in a cell: it shows 0.3. The functions are in the
"Token Factory" category of the function wizard (Shift+F3).
"@
