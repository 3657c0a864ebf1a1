"""SA3 Studio entry point: the window by default, `generate` for headless use."""

import sys

from engines.cli.pipes import quiet_on_closed_pipes
from engines.models.gpu_runtime_site import activate_gpu_runtime

ENGINE_COMMANDS = ("generate", "--list-models")
USAGE = """usage: sa3-studio [generate FLAGS | batch LIST | library CMD | models CMD |
                  team CMD | install-desktop | -h]

  (no arguments)    open the SA3 Studio window
  generate FLAGS    render one clip without the GUI (see: generate --help)
  batch LIST        render a sound list (CSV or JSON) into a folder (see: batch --help)
  library COMMAND   list, show, export, rate, tag, delete or purge kept takes (library --help)
  models COMMAND    list, download, build or self-test engines, fetch the GPU runtime
                    (see: models --help)
  team COMMAND      the team library on PostgreSQL: init, publish, list, search, similar,
                    fetch, rate, tag (see: team --help)
  install-desktop   add SA3 Studio to this user's desktop menus (Linux; --uninstall)
  --list-models     list the model sets and where their files are expected
  -h, --help        show this message"""


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except KeyboardInterrupt:  # Ctrl+C while a command's modules still load: nothing began yet
        print("cancelled: interrupted before anything was made; nothing was written.",
              file=sys.stderr)
        return 130


def _run(argv: list[str] | None) -> int:
    # Each command's module is imported in its branch, not at the top: one command (or the
    # window) must not wait for the modules of all the others.
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["_build-demo-set"]:  # engines.demo.BUILD_ARGUMENT: a bundle's demo build
        from engines.demo.build import main as build_demo_main

        return build_demo_main(args[1:])
    if args[:1] in (["-h"], ["--help"]):
        restore = quiet_on_closed_pipes()  # `--help | head` is no failure
        print(USAGE)
        restore()
        return 0
    activate_gpu_runtime()  # a fetched TensorRT on sys.path before anything imports it
    if args[:1] == ["install-desktop"]:
        from engines.cli.desktop import main as desktop_main

        return desktop_main(args[1:])
    if args[:1] == ["team"]:
        from engines.cli.team import main as team_main

        return team_main(args[1:])
    if args[:1] == ["batch"]:
        from engines.cli.batch import main as batch_main

        return batch_main(args[1:])
    if args[:1] == ["library"]:
        from engines.cli.library import main as library_main

        return library_main(args[1:])
    if args[:1] == ["models"]:
        from engines.cli.models import main as models_main

        return models_main(args[1:])
    if args[:1] and args[0] in ENGINE_COMMANDS:
        from engines.cli.generate import main as cli_main

        return cli_main(args)
    if args and not args[0].startswith("-"):
        # A typo must not open the window: say so, like every other refusal.
        word = args[0].encode("utf-8", "backslashreplace").decode("utf-8")
        print(f"error: '{word}' is not a command; run `python main.py --help` for the "
              "commands.", file=sys.stderr)
        return 2
    from app import run_gui

    return run_gui(args)


def gui_main() -> int:
    """The `sa3-studio-gui` entry (gui-scripts: Windows opens no console for it): the window,
    whatever the arguments (Qt's own, like -platform, pass through)."""
    activate_gpu_runtime()
    from app import run_gui

    return run_gui(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
