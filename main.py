"""SA3 Studio entry point: the window by default, `generate` for headless use."""

import sys

ENGINE_COMMANDS = ("generate", "--list-models")
USAGE = """usage: sa3-studio [generate FLAGS | batch LIST | library CMD | models CMD | -h]

  (no arguments)    open the SA3 Studio window
  generate FLAGS    render one clip without the GUI (see: generate --help)
  batch LIST        render a sound list (CSV or JSON) into a folder (see: batch --help)
  library COMMAND   list, show, export, rate, tag, delete or purge kept takes (library --help)
  models COMMAND    list, download, build or self-test engines (see: models --help)
  --list-models     list the model sets and where their files are expected
  -h, --help        show this message"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        from engines.cli.pipes import quiet_on_closed_pipes  # `--help | head` is no failure

        restore = quiet_on_closed_pipes()
        print(USAGE)
        restore()
        return 0
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


if __name__ == "__main__":
    sys.exit(main())
