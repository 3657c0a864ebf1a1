"""Building the demo set's files, and `python -m engines.demo.build MODELS_ROOT`: the process of
its own that engines.demo.ensure_demo_models runs the build in.

Why a process of its own: building imports onnx, whose C extensions (and ml_dtypes') hold the
GIL for about a second while they initialise, and the build itself is a second of numpy and
protobuf work; on a thread of the window's process that froze the window. A process of its own
also keeps onnx out of every process that only runs the set.

The child reports a failure on stdout as one JSON line, {"oserror": [errno, strerror,
filename]} or {"refused": sentence}, and exits non-zero; anything else is a bug, whose
traceback goes to stderr for the parent's log.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from engines import demo
from engines.adapters.bases import bases_file_bytes
from engines.demo.codec_graphs import decoder_model, encoder_model
from engines.demo.dit_graph import dit_model
from engines.demo.dit_linears import LinearForm, demo_branch_map, frozen_bases
from engines.demo.recipes import build_tokenizer_json, build_vocabulary
from engines.demo.text_encoder_graph import text_encoder_model
from engines.errors import StudioError

log = logging.getLogger(__name__)

EXIT_OSERROR = 3
EXIT_REFUSED = 4


def build_demo_models(models_root: Path) -> Path:
    """Build the demo ONNX files here, in this process; returns their folder.

    Each file is written atomically and the version stamp last, so an interrupted build is
    simply redone next time and concurrent builders write identical bytes.
    """
    folder = demo.demo_dir(models_root)
    log.info("building the demo model set in %s", folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = build_vocabulary()
    models = {
        demo.TEXT_ENCODER_FILE: text_encoder_model(vocab.embeddings, vocab.bigrams),
        demo.DIT_FILE: dit_model(),
        demo.DIT_BRANCH_FILE: dit_model(LinearForm("branch")),
        demo.ENCODER_FILE: encoder_model(),
        demo.DECODER_FILE: decoder_model(),
        demo.DECODER_COARSE_FILE: decoder_model(coarse=True),
    }
    for name, model in models.items():
        demo.write_atomic(folder / name, model.SerializeToString(deterministic=True))
    branch_map = json.dumps(demo_branch_map().to_json(), indent=1)
    demo.write_atomic(folder / demo.DIT_BRANCH_MAP_FILE, branch_map.encode("utf-8"))
    demo.write_atomic(folder / demo.DIT_BRANCH_BASES_FILE, bases_file_bytes(frozen_bases()))
    demo.write_atomic(folder / demo.TOKENIZER_FILE, build_tokenizer_json().encode("utf-8"))
    demo.write_atomic(folder / demo.STAMP_NAME, demo.stamp_bytes())
    return folder


def main(argv: list[str]) -> int:
    try:
        build_demo_models(Path(argv[0]))
    except OSError as exc:
        print(json.dumps({"oserror": [exc.errno, exc.strerror or str(exc),
                                      None if exc.filename is None else str(exc.filename)]}))
        return EXIT_OSERROR
    except StudioError as exc:  # a resource missing: its sentence says what to do
        print(json.dumps({"refused": str(exc)}))
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
