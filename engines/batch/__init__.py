"""Batch rendering from a sound list (issue 12): `python main.py batch LIST --out DIR`.

A sound team plans audio as a list (CSV or JSON): one row per sound, with variations. The batch
renders every take with engines loaded once (or once per worker process), writes each file with
its sidecar, keeps every take in the library and records the whole run in DIR/manifest.json, so
a stopped or killed run continues where it left off.

Split by job:
    sound_list  reading the list file into rows (CSV with its physical line numbers, or JSON)
    items       one row's values checked and turned into a RowSpec, or one sentence why not
    plan        rows to takes: file names, seeds, parameter hashes, what an earlier run did
    manifest    DIR/manifest.json, rewritten atomically after every take
    workers     rendering one take (engine + finishing), in this process or in worker processes
    devices     how many workers, on which GPUs; which engine combinations can run here
    keeping     the library (the parent process is its only writer)
    output      one take's file and sidecar moved into place together
    progress    a progress bar on a terminal, plain lines otherwise
    estimate    the time a plan will take, for --dry-run
    runner      the loop: dispatch, collect, write, record; Ctrl+C stops after the current take
    resume      what an earlier run made, verified before it is skipped
    session     the whole batch composed once, for both front ends (engines/cli/batch.py and
                app/batch/run.py): plan, output folder, render
"""
