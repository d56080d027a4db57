"""What site.py runs of a .pth, decided on the text alone; bounded, inert previews; capped reads."""

from __future__ import annotations

import os

import pytest

from driftscan.environment.startup import (PREVIEW_BYTES, PREVIEW_LINES, READ_LIMIT, customize_module,
                                           executable_lines, inspect, is_startup_file, modified_pth, preview)


@pytest.mark.parametrize("line, runs", [
    ("import os", True),
    ("import\tos", True),
    ("import os; os.environ.setdefault('X', '1')", True),
    (" import os", False),  # a leading blank makes it a path
    ("importlib", False),
    ("import", False),  # no space or tab after the keyword
    ("#import os", False),
    ("from os import path", False),
    ("/some/dir", False),
])
def test_executable_lines_follow_site_py(line, runs):
    assert executable_lines(f"# comment\n{line}\n") == ([(2, line)] if runs else [])


def test_a_byte_order_mark_and_other_line_breaks_count():
    assert executable_lines("\ufeffimport os\n") == [(1, "import os")]
    assert executable_lines("x\rimport os\r\n") == [(2, "import os")]


def test_preview_is_bounded_and_says_what_was_cut():
    text = "".join(f"line {n}\n" for n in range(1, 31)).encode()
    shown = preview(text, len(text))
    assert shown.splitlines()[:PREVIEW_LINES] == [f"line {n}" for n in range(1, PREVIEW_LINES + 1)]
    assert "cut" in shown.splitlines()[-1] and len(shown.splitlines()) == PREVIEW_LINES + 1
    one_line = b"import os;" + b"x" * (3 * PREVIEW_BYTES)
    shown = preview(one_line, 50 << 20)
    first, note = shown.splitlines()
    assert first == one_line[:PREVIEW_BYTES].decode()
    assert note.startswith("… (cut:") and note.endswith("of 52.4 MB)")


def test_preview_is_inert():
    shown = preview(b"import os\x1b]0;title\x07\x1b[2J\n\xff\xfe\n", 20)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b" in shown and "\\xff" in shown


def test_a_path_only_pth_is_no_startup_code(tmp_path):
    (tmp_path / "paths.pth").write_text("# a comment\n/opt/lib\n../other\n")
    assert inspect(str(tmp_path), str(tmp_path / "paths.pth")) is None


def test_an_import_line_is_quoted_with_its_number(tmp_path):
    (tmp_path / "zz.pth").write_text("/opt/lib\nimport os; os.environ.setdefault('NOMLA_DEBUG','1')\n")
    found = inspect(str(tmp_path), str(tmp_path / "zz.pth"))
    assert found is not None
    assert found.evidence == ("runs at every start of this environment's interpreter: "
                              "line 2: import os; os.environ.setdefault('NOMLA_DEBUG','1')")
    assert found.preview == "/opt/lib\nimport os; os.environ.setdefault('NOMLA_DEBUG','1')"


def test_customize_modules_are_startup_code_whatever_they_hold(tmp_path):
    for name in ("sitecustomize.py", "usercustomize.py"):
        (tmp_path / name).write_text("x = 1\n")
        found = inspect(str(tmp_path), str(tmp_path / name))
        assert found is not None and f"imports {name[:-3]}" in found.evidence and found.preview == "x = 1"


@pytest.mark.parametrize("rel, module, form", [
    ("sitecustomize/__init__.py", "sitecustomize", "(a package)"),
    ("usercustomize/__init__.py", "usercustomize", "(a package)"),
    ("sitecustomize.cpython-312-x86_64-linux-gnu.so", "sitecustomize", "(an extension module)"),
    ("sitecustomize.abi3.so", "sitecustomize", "(an extension module)"),
    ("sitecustomize.pyd", "sitecustomize", "(an extension module)"),
    ("sitecustomize.pyc", "sitecustomize", "(sourceless bytecode)"),
])
def test_every_form_the_import_system_takes_is_startup_code(tmp_path, rel, module, form):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF\x00binary" if form != "(a package)" else b"import os\n")
    assert customize_module(str(tmp_path), str(path)) == module and is_startup_file(str(tmp_path), str(path))
    found = inspect(str(tmp_path), str(path))
    assert found is not None and f"imports {module} {form} at start-up" in found.evidence
    assert (found.preview is None) == (form != "(a package)"), "machine code and bytecode are not quoted"


@pytest.mark.parametrize("rel", ["sitecustomize.py.bak", "sitecustomize.txt", "sitecustomize/hooks.py",
                                 "pkg/sitecustomize.py", "sitecustomize/sub/__init__.py", "mysitecustomize.py",
                                 "__pycache__/sitecustomize.cpython-312.pyc"])
def test_other_files_are_not_startup_code(tmp_path, rel):
    assert customize_module(str(tmp_path), str(tmp_path / rel)) is None
    assert not is_startup_file(str(tmp_path), str(tmp_path / rel))


def test_a_large_pth_is_read_up_to_its_cap_only(tmp_path):
    big = tmp_path / "big.pth"
    with open(big, "wb") as f:
        f.write(b"/opt/lib\n" * ((READ_LIMIT // 9) + 1000))
        f.write(b"import os\n")
    found = inspect(str(tmp_path), str(big))
    assert found is not None and "the rest is unchecked" in found.evidence  # never assumed harmless


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_unreadable_startup_files_are_reported_unread(tmp_path):
    os.mkfifo(tmp_path / "fifo.pth")
    os.symlink("/dev/zero", tmp_path / "zero.pth")
    for name in ("fifo.pth", "zero.pth"):
        found = inspect(str(tmp_path), str(tmp_path / name))
        assert found is not None and found.preview is None and "not read (" in found.evidence, name


def test_a_modified_pth_says_what_it_runs_or_nothing(tmp_path):
    (tmp_path / "owned.pth").write_text("/opt/lib\n")
    assert modified_pth(str(tmp_path), str(tmp_path / "owned.pth")) is None
    (tmp_path / "owned.pth").write_text("/opt/lib\nimport os\n")
    found = modified_pth(str(tmp_path), str(tmp_path / "owned.pth"))
    assert found is not None and found.evidence.endswith("line 2: import os")
