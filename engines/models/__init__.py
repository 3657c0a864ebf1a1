"""Getting the Stable Audio 3 model files: what this machine has (`inventory`), what to fetch
for each model set (`hub_files`), and the download itself from the Hugging Face Hub into the
models folder (`download`).

No Qt here: the GUI and the CLI both call `download.download` with a progress callback and a
`threading.Event` to cancel.
"""
