"""The words the debug-code rules know: dump and debugger functions, marker words, shapes. One
place for both readers of the code, the libcst rules (analysis.py) and the CPython-tree
pre-checks (astfacts.py), which must agree on every name; no libcst here."""

from __future__ import annotations

import enum
import re


class ActionKind(str, enum.Enum):
    """What a call does that debug code does (analysis.Action)."""

    DUMP = "dump"  # serialises to a file: torch.save, numpy.save, pickle.dump...
    TMP_WRITE = "tmp-write"  # writes to a hard-coded /tmp path
    DEBUGGER = "debugger"  # breakpoint(), pdb.set_trace()...
    PRINT = "print"  # a print statement


class ReasonKind(str, enum.Enum):
    """Why an action looks like debug code (analysis.Reason, astdump's reasons)."""

    TMP_PATH = "tmp-path"
    DEBUG_PATH = "debug-path"
    PER_CALL = "per-call"
    ONE_SHOT = "one-shot"
    SHAPE = "shape"
    SWITCH = "switch"  # the only weak one: a debug switch guards it, off unless asked for


class FileProblem(str, enum.Enum):
    """What a file-level rule (``Rule.FILE_PROBLEM``) reports: a file the engine could not inspect,
    or (NOQA) a comment no visitor sees."""

    READ = "read"  # not read (or not decoded)
    PARSE = "parse"  # not parsed
    SIZE = "size"  # over the size limit: not inspected
    COMPLEXITY = "complexity"  # nested too deeply or too complex to parse safely
    NOQA = "noqa"  # an unused noqa comment: the engine reports it


#: The problems that leave a file's findings unknown.
NOT_INSPECTED = (FileProblem.PARSE, FileProblem.READ, FileProblem.SIZE, FileProblem.COMPLEXITY)

MARKER_WORDS = frozenset({"debug", "debugging", "dbg", "dump", "dumps", "dumped", "dumping", "dumper"})
WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# name -> (position of the path argument, its keyword)
DUMP_FUNCTIONS = {
    "torch.save": (1, "f"),
    "torch.jit.save": (1, "f"),
    "numpy.save": (0, "file"),
    "numpy.savez": (0, "file"),
    "numpy.savez_compressed": (0, "file"),
    "numpy.savetxt": (0, "fname"),
    "pickle.dump": (1, "file"),
    "cloudpickle.dump": (1, "file"),
    "dill.dump": (1, "file"),
    "joblib.dump": (1, "filename"),
    "safetensors.torch.save_file": (1, "filename"),
    "safetensors.numpy.save_file": (1, "filename"),
}
DEBUGGER_FUNCTIONS = frozenset(
    {"breakpoint", "pdb.pm", "pdb.run", "pdb.runcall", "debugpy.listen", "debugpy.wait_for_client",
     "debugpy.breakpoint", "IPython.embed", "code.interact", "torch.distributed.breakpoint"}
)
DEBUGGER_METHODS = frozenset({"set_trace", "post_mortem"})
DEBUGGER_MODULES = frozenset({"pdb", "ipdb", "pudb", "debugpy", "pydevd", "pydevd_pycharm", "wdb",
                              "web_pdb", "remote_pdb"})
OPEN_FUNCTIONS = frozenset({"open", "io.open", "builtins.open", "codecs.open"})
SHAPE_ATTRS = frozenset({"shape", "ndim"})
SHAPE_METHODS = frozenset({"size", "numel", "dim"})
EPHEMERAL = frozenset({"io.BytesIO", "io.StringIO", "tempfile.TemporaryFile", "tempfile.NamedTemporaryFile",
                       "tempfile.SpooledTemporaryFile"})
