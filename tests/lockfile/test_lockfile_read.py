"""Every lock format read from small hand-written files: names, versions, sources, hashes, and
one-line errors for what is wrong."""

from __future__ import annotations

import hashlib

import pytest

from driftscan.core.errors import DriftscanError
from driftscan.lockfile.model import LockError, LockFormat, SourceKind
from driftscan.lockfile.read import read_lock

H1 = hashlib.sha256(b"one").hexdigest()
H2 = hashlib.sha256(b"two").hexdigest()
H3 = hashlib.sha256(b"three").hexdigest()

UV_LOCK = f'''
version = 1
revision = 3
requires-python = ">=3.9"

[[package]]
name = "app"
version = "0.1.0"
source = {{ editable = "." }}
dependencies = [{{ name = "six" }}, {{ name = "Colorama", marker = "sys_platform == 'win32'" }}]

[[package]]
name = "six"
version = "1.17.0"
source = {{ registry = "https://pypi.org/simple" }}
sdist = {{ url = "https://example.invalid/six-1.17.0.tar.gz", hash = "sha256:{H1}", size = 10 }}
wheels = [{{ url = "https://example.invalid/six-1.17.0-py2.py3-none-any.whl", hash = "sha256:{H2.upper()}", size = 20 }}]

[[package]]
name = "colorama"
version = "0.4.6"
source = {{ git = "https://github.com/example/colorama?rev=abc#abc" }}
'''


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_uv_lock_packages_sources_and_hashes(tmp_path):
    lock = read_lock(write(tmp_path, "uv.lock", UV_LOCK))
    assert lock.format is LockFormat.UV and lock.requires_python == ">=3.9"
    by_name = {p.name: p for p in lock.packages}
    assert set(by_name) == {"app", "six", "colorama"}
    six = by_name["six"]
    assert six.version == "1.17.0" and six.source is SourceKind.REGISTRY
    assert six.location == "https://pypi.org/simple"
    wheel = next(f for f in six.files if f.is_wheel)
    assert (wheel.filename, wheel.sha256, wheel.size) == ("six-1.17.0-py2.py3-none-any.whl", H2, 20)
    sdist = next(f for f in six.files if not f.is_wheel)
    assert sdist.sha256 == H1 and sdist.filename == "six-1.17.0.tar.gz"
    assert by_name["app"].source is SourceKind.EDITABLE and by_name["app"].location == "."
    assert by_name["colorama"].source is SourceKind.GIT
    assert by_name["colorama"].location.startswith("https://github.com/example/colorama")
    assert lock.graph is not None
    assert [lock.packages[i].name for i in lock.graph.roots] == ["app"]


def test_uv_lock_found_by_content_under_another_name(tmp_path):
    assert read_lock(write(tmp_path, "project.lock", UV_LOCK)).format is LockFormat.UV


PYLOCK = f'''
lock-version = "1.0"
created-by = "hand"
requires-python = ">=3.9"

[[packages]]
name = "Jmes_Path"
version = "1.1.0"
marker = "python_version >= '3.9'"
index = "https://pypi.org/simple"
wheels = [{{ name = "jmespath-1.1.0-py3-none-any.whl", url = "https://example.invalid/j.whl", size = 5, hashes = {{ sha256 = "{H3}", md5 = "x" }} }}]

[[packages]]
name = "local"
directory = {{ path = "../../etc", editable = true }}

[[packages]]
name = "fromvcs"
vcs = {{ type = "git", url = "file:///etc/passwd", commit-id = "0123" }}
'''


def test_pylock_packages(tmp_path):
    lock = read_lock(write(tmp_path, "pylock.dev.toml", PYLOCK))
    assert lock.format is LockFormat.PYLOCK and lock.requires_python == ">=3.9"
    jp, local, vcs = lock.packages
    assert jp.name == "jmes-path" and jp.version == "1.1.0" and jp.marker == "python_version >= '3.9'"
    assert jp.files[0].sha256 == H3 and jp.files[0].filename == "jmespath-1.1.0-py3-none-any.whl"
    assert (local.source, local.location) == (SourceKind.EDITABLE, "../../etc")
    assert (vcs.source, vcs.location) == (SourceKind.GIT, "file:///etc/passwd")


# pdm.lock as pdm documents it (pdm does not run here): [metadata] lock_version, files with hashes.
PDM_LOCK = f'''
[metadata]
groups = ["default"]
lock_version = "4.5.0"
requires_python = ">=3.10"

[[package]]
name = "requests"
version = "2.32.3"
requires_python = ">=3.8"
marker = "python_version >= '3.10'"
files = [
    {{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{H1}"}},
    {{file = "requests-2.32.3.tar.gz", hash = "sha256:{H2}"}},
]
'''

# poetry.lock as poetry documents it (poetry does not run here): [metadata] content-hash,
# files = [{{file, hash}}], [package.source] for non-index packages, optional for extras.
POETRY_LOCK = f'''
[[package]]
name = "click"
version = "8.1.7"
optional = false
python-versions = ">=3.7"
files = [
    {{file = "click-8.1.7-py3-none-any.whl", hash = "sha256:{H1}"}},
]

[[package]]
name = "rich"
version = "13.0.0"
optional = true
python-versions = ">=3.7"
markers = "sys_platform != 'win32'"
files = []

[package.source]
type = "git"
url = "https://github.com/example/rich.git"
reference = "main"
resolved_reference = "abc"

[metadata]
lock-version = "2.0"
python-versions = "^3.10"
content-hash = "{H3}"
'''


def test_pdm_lock(tmp_path):
    lock = read_lock(write(tmp_path, "pdm.lock", PDM_LOCK))
    assert lock.format is LockFormat.PDM and lock.requires_python == ">=3.10"
    (pkg,) = lock.packages
    assert (pkg.name, pkg.version, pkg.marker) == ("requests", "2.32.3", "python_version >= '3.10'")
    assert [(f.filename, f.sha256, f.is_wheel) for f in pkg.files] == [
        ("requests-2.32.3-py3-none-any.whl", H1, True), ("requests-2.32.3.tar.gz", H2, False)]


def test_poetry_lock(tmp_path):
    lock = read_lock(write(tmp_path, "poetry.lock", POETRY_LOCK))
    assert lock.format is LockFormat.POETRY
    click, rich = lock.packages
    assert click.files[0].sha256 == H1 and not click.optional and click.source is SourceKind.REGISTRY
    assert rich.optional and rich.marker == "sys_platform != 'win32'"
    assert (rich.source, rich.location) == (SourceKind.GIT, "https://github.com/example/rich.git")


@pytest.mark.parametrize(("name", "text", "fmt"), [("a.lock", PDM_LOCK, LockFormat.PDM),
                                                   ("b.lock", POETRY_LOCK, LockFormat.POETRY),
                                                   ("c.toml", PYLOCK, LockFormat.PYLOCK)])
def test_format_from_content(tmp_path, name, text, fmt):
    assert read_lock(write(tmp_path, name, text)).format is fmt


REQUIREMENTS = f"""\
# a comment
--index-url https://example.invalid/simple
-r ../../etc/passwd
-c constraints.txt
Six==1.17.0 \\
    --hash=sha256:{H1} \\
    --hash=sha256:{H2}
    # via -r r.in
colorama==0.4.6 ; sys_platform == "win32" --hash=sha256:{H3}
jmespath>=1.0
pkg @ https://example.invalid/pkg-1.0-py3-none-any.whl#sha256={H1} --hash=sha256:{H1}
-e ./local#egg=localpkg
"""


def test_requirements_with_hashes(tmp_path):
    lock = read_lock(write(tmp_path, "requirements.txt", REQUIREMENTS))
    assert lock.format is LockFormat.REQUIREMENTS
    by_name = {p.name: p for p in lock.packages}
    assert list(by_name) == ["six", "colorama", "jmespath", "pkg", "localpkg"]
    assert by_name["six"].version == "1.17.0"
    assert [f.sha256 for f in by_name["six"].files] == [H1, H2]
    assert by_name["colorama"].marker == 'sys_platform == "win32"'
    assert by_name["jmespath"].version is None and by_name["jmespath"].files == ()
    pkg = by_name["pkg"]
    assert pkg.source is SourceKind.URL and pkg.location.startswith("https://example.invalid/pkg-1.0")
    assert pkg.files[0].filename == "pkg-1.0-py3-none-any.whl" and pkg.files[0].sha256 == H1
    assert by_name["localpkg"].source is SourceKind.EDITABLE
    notes = "\n".join(lock.notes)
    assert "../../etc/passwd: another file, not followed" in notes
    assert "constraints.txt: another file, not followed" in notes
    assert "--index-url: ignored" in notes


@pytest.mark.parametrize(("name", "text", "expect"), [
    ("uv.lock", "version = 1\n[[package]]\nname = 3\n", "package[0].name: expected a string"),
    ("uv.lock", "version = 1\npackage = 'x'\n", "package: expected an array"),
    ("uv.lock", "version = 1\n[[package]]\nname = 'not a name!'\n", "not a valid package name"),
    ("uv.lock", "version = 1\n[[package]]\nname = 'a'\nwheels = [{hash = 'sha256:zz'}]\n", "not a sha256 digest"),
    ("uv.lock", "version = 1\n[[package\n", "not valid TOML"),
    ("pylock.toml", "lock-version = '1.0'\n[[packages]]\nversion = '1'\n", "no 'name'"),
    ("requirements.txt", "six==1.0 ; ???\n", "line 1: not a requirement"),
    ("requirements.txt", "../../etc/passwd\n", "line 1: not a requirement"),
    ("thing.toml", "[tool]\nx = 1\n", "not a lockfile driftscan knows"),
])
def test_bad_content_is_one_line_naming_the_file(tmp_path, name, text, expect):
    path = write(tmp_path, name, text)
    with pytest.raises(LockError) as err:
        read_lock(path)
    message = str(err.value)
    assert isinstance(err.value, DriftscanError)
    assert message.startswith(path) and expect in message and "\n" not in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LockError, match="not found"):
        read_lock(str(tmp_path / "uv.lock"))
    with pytest.raises(LockError, match="not a regular file"):
        read_lock(str(tmp_path))


def test_not_utf8(tmp_path):
    path = write(tmp_path, "uv.lock", b"version = 1\n# \xff\xfe\n", mode="wb")
    with pytest.raises(LockError, match="not UTF-8"):
        read_lock(path)


def test_top_level_field_of_the_wrong_type_and_a_byte_order_mark(tmp_path):
    with pytest.raises(LockError, match=r"uv.lock: requires-python: expected a string, found an integer$"):
        read_lock(write(tmp_path, "uv.lock", "version = 1\nrequires-python = 3\n"))
    lock = read_lock(write(tmp_path, "requirements.txt", "\ufeffsix==1.17.0\n"))
    assert [(p.name, p.version) for p in lock.packages] == [("six", "1.17.0")]
