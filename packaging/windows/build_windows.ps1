# Builds the Windows bundle and its per-user installer:
#   dist\sa3-studio\            "SA3 Studio.exe" (windowed) and sa3-studio.exe (console)
#   dist\sa3-studio-<version>-windows-x64-setup.exe
# The same steps as packaging/build_linux.sh: a fresh build venv, the wheel (sdist first),
# the wheel and PyInstaller installed, the icon rendered from resources\icons\app.svg,
# PyInstaller on packaging\sa3_studio.spec, a demo take from the bundle, then Inno Setup.
#
#   powershell -ExecutionPolicy Bypass -File packaging\windows\build_windows.ps1
# Needs: Python 3.11+ (py launcher), Inno Setup 6 (iscc on PATH or in its default folder).
# Not run in this project's CI (it has no Windows machine); see docs/windows.md.
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..\..")

$work = "build\bundle"
$version = (py -3 -c "import tomllib; print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])").Trim()

if (Test-Path $work) { Remove-Item -Recurse -Force $work }
py -3 -m venv "$work\venv"
$python = "$work\venv\Scripts\python.exe"
& $python -m pip install -q --upgrade pip build pillow
& $python -m build --outdir "$work\wheel" .
$wheel = (Get-ChildItem "$work\wheel\sa3_studio-*.whl").FullName
& $python -m pip install -q "$wheel[bundle]"

& $python packaging\make_icon.py packaging\windows\sa3-studio.ico
if (Test-Path "dist\sa3-studio") { Remove-Item -Recurse -Force "dist\sa3-studio" }
& $python -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist `
    --workpath "$work\pyinstaller" packaging\sa3_studio.spec

$check = Join-Path $env:TEMP ("sa3-check-" + [guid]::NewGuid())
$env:SA3_STUDIO_HOME = "$check\home"
& "dist\sa3-studio\sa3-studio.exe" generate --prompt "coin pickup, bright" --seconds 1 --seed 7 --out "$check\demo.wav"
if ($LASTEXITCODE -ne 0 -or -not (Test-Path "$check\demo.wav")) { throw "the bundle wrote no demo take" }
Remove-Item -Recurse -Force $check
Remove-Item Env:SA3_STUDIO_HOME

$iscc = (Get-Command iscc -ErrorAction SilentlyContinue).Source
if (-not $iscc) { $iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
& $iscc "/DAppVersion=$version" packaging\windows\sa3-studio.iss
if ($LASTEXITCODE -ne 0) { throw "Inno Setup failed" }
