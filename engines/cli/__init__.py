"""The command line: an interface layer beside the GUI (app/), over the same engine calls.

One module per command, plus what they share:
    generate        `python main.py generate`: one clip (or N variations) to a file
    batch           `python main.py batch LIST --out DIR`: a sound list (engines/batch does it)
    library         `python main.py library list|show` and the wiring of every library command
    library_edit    `library rate|tag|favourite|delete|restore|purge`
    library_export  `library export` (with finishing)
    models          `python main.py models list|download|build|selftest|token|...`
    support         exit codes, one-line refusals, run_command (no traceback ever reaches the user)
    pipes           a reader closing stdout (`| head`) is no failure: output stops, work goes on
    finishing       the finishing flags `generate`, `batch` and `library export` share
    output          checks before a render, and the audio + sidecar pair moved into place together
    keeping         how `generate` keeps its take in the library (a failure never costs the file)
"""
