; Inno Setup script for SA3 Studio: a per-user installer (no administrator rights) of the
; one-folder PyInstaller bundle in dist\sa3-studio\ (packaging\windows\build_windows.ps1 builds
; both). Installs into %LOCALAPPDATA%\Programs\SA3 Studio, adds a Start-menu entry (and an
; optional desktop icon) for the windowed executable, and an uninstaller. User data (models,
; library, logs in %LOCALAPPDATA%\SA3 Studio) is never touched by install or uninstall.
;
;   iscc /DAppVersion=0.1.0 packaging\windows\sa3-studio.iss
; (Inno Setup 6.1 or newer; paths below are relative to this file.)

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "SA3 Studio"
#define BundleDir "..\..\dist\sa3-studio"

[Setup]
; A fixed AppId: upgrades replace the installed version instead of adding a second one.
AppId={{6C1D7E52-3B0A-4E8F-9C5A-2F1B8D4A7E10}
AppName={#AppName}
AppVersion={#AppVersion}
AppPublisher=SA3 Studio
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; Per user: {autopf} becomes %LOCALAPPDATA%\Programs, shortcuts go to the user's Start menu.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=sa3-studio-{#AppVersion}-windows-x64-setup
SetupIconFile=sa3-studio.ico
UninstallDisplayIcon={app}\SA3 Studio.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
; Long paths inside the bundle stay under MAX_PATH from the default folder; see docs/windows.md.

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[InstallDelete]
; An upgrade replaces the whole bundle: files a newer version no longer has must not linger.
Type: filesandordirs; Name: "{app}\_internal"

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\SA3 Studio.exe"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\SA3 Studio.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\SA3 Studio.exe"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
