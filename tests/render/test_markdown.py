"""``--format markdown``: rendered with a real markdown renderer (markdown-it-py, CommonMark with
GFM tables, raw HTML passed through as GitHub's renderer does before sanitising), and the HTML
checked: tables, hostile file names that stay text, collapsed diffs, the stated truncation."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from driftscan.render import RENDERERS
from driftscan.render.markdown import MAX_BYTES, code, esc, render_markdown
from fixtures.formats import HOSTILE_NAMES, NAME, audit, make_scenario
from fixtures.harness import run_cli


class Html(HTMLParser):
    """What the rendered page holds: every tag, the tables (rows of cell texts), the text of
    each <pre> and <summary>, and all text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.pres: list[str] = []
        self.summaries: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._pre: list[str] | None = None
        self._summary: list[str] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "pre":
            self._pre = []
        elif tag == "summary":
            self._summary = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None
        elif tag == "summary" and self._summary is not None:
            self.summaries.append("".join(self._summary))
            self._summary = None

    def handle_data(self, data):
        self.text.append(data)
        for buf in (self._cell, self._pre, self._summary):
            if buf is not None:
                buf.append(data)


MD = MarkdownIt("commonmark").enable("table")


def rendered(markdown: str) -> Html:
    return Html(MD.render(markdown))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return make_scenario(tmp_path_factory.mktemp("md"))


@pytest.fixture(scope="module")
def report(scenario):
    return audit(scenario)


@pytest.fixture(scope="module")
def page(report):
    return rendered(render_markdown(report))


def drift_tables(page: Html) -> list[list[list[str]]]:
    return [t for t in page.tables if t and t[0] == ["kind", "path", "prediction", "remedy"]]


def test_registered_as_a_format():
    assert RENDERERS["markdown"] is render_markdown


def test_counts_per_scope_and_kind(report, page):
    counts = page.tables[0]
    header = counts[0]
    assert header[0] == "scope" and header[-1] == "total"
    assert {"modified", "added", "debug-artifacts"} <= set(header)
    rows = {r[0]: dict(zip(header, r)) for r in counts[1:]}
    assert rows["package"]["modified"] == "3" and rows["package"]["total"] == "3"
    assert rows["environment"]["added"] == str(len(HOSTILE_NAMES))
    assert rows["external"]["debug-artifacts"] == "1"
    assert rows["total"]["total"] == str(len(report.drifts))


def test_one_table_per_distribution_with_kind_path_prediction_remedy(report, page):
    tables = drift_tables(page)
    assert len(tables) == 3  # fmtpkg, files no distribution owns, dumps
    package = {r[1].split(" (")[0]: r for r in tables[0][1:]}
    assert set(package) == {f"{NAME}/model.py", f"{NAME}/util.py", f"{NAME}/config.json"}
    model = package[f"{NAME}/model.py"]
    assert model[0] == "modified" and model[2] == "WIPED"
    # the venv was made --without-pip (pip ran from outside): its remedy is uv's, and says why
    assert model[3].endswith(f"--reinstall --no-deps {NAME}==1.0") and "has no pip installed" in model[3]
    dumps = tables[2][1]
    assert dumps[0] == "debug-artifacts" and dumps[2] == "SURVIVES" and "nomla_in_*.pt" in dumps[1]
    assert "### " not in "".join(page.text)  # headings were rendered, not shown
    assert f"{NAME} 1.0 (pip)" in "".join(page.text)


def test_the_original_compared_with_is_named(report, page):
    text = "".join(page.text)
    assert "Original compared with: wheels" in text and f"{NAME}-1.0-py3-none-any.whl" in text


def test_hostile_file_names_stay_text_in_their_cell(page):
    assert "script" not in page.tags and "img" not in page.tags
    assert page.tags.count("a") == 0  # "[y](z)" made no link
    assert "em" not in page.tags  # "_x_" made no emphasis
    added = drift_tables(page)[1]
    assert all(len(row) == 4 for row in added), added  # no name ended a cell or opened a column
    paths = {row[1].rsplit(" (", 1)[0] for row in added[1:]}
    shown = {name.replace("\n", "\\n") for name in HOSTILE_NAMES}
    assert paths == {f"{NAME}/{name}" for name in shown}


def test_debug_findings_as_path_line_code_message(report, page):
    text = "".join(page.text)
    model = next(d for d in report.drifts if d.relpath == f"{NAME}/model.py")
    for f in model.findings:
        assert f"{NAME}/model.py:{f.line} {f.code} {f.message}" in text
    # the original util.py has its breakpoint() too: not what drifted, so only in a collapsed block
    util = next(d for d in report.drifts if d.relpath == f"{NAME}/util.py")
    upstream = [f for f in util.findings if f.origin == "upstream"]
    assert upstream, util.findings
    assert any("also in the original file" in s for s in page.summaries)
    markdown = render_markdown(report)
    listed = markdown.index(f"{NAME}/util.py:{upstream[0].line}</code>")
    assert markdown.rfind("<details>", 0, listed) > markdown.rfind("Debug code found", 0, listed)


def test_diffs_and_json_changes_are_collapsed(page):
    assert page.tags.count("details") >= 3 and page.tags.count("summary") == page.tags.count("details")
    diff = next(p for p in page.pres if "+        breakpoint()" in p)
    assert diff.startswith(f"--- a/{NAME}/model.py")
    assert any(s.startswith(f"Diff of {NAME}/model.py") for s in page.summaries)
    assert any(s.startswith(f"JSON changes in {NAME}/config.json") for s in page.summaries)
    changes = next(t for t in page.tables if t[0] == ["op", "pointer", "old", "new"])
    assert ["removed", "/kv_cache_scheme", '{"bits": 8}', ""] in changes
    assert ["changed", "/hidden", "16", "32"] in changes


def test_a_fence_in_a_diff_cannot_close_the_block():
    from driftscan.render.markdown import _fenced

    # a diff's context line starts with a space, and " ```" closes a ``` fence (3 spaces of indent may)
    block = _fenced(" x = 1\n ```\n </details><script>alert(1)</script>\n", "diff")
    page = rendered("\n".join(["<details><summary>d</summary>", "", *block, "", "</details>", ""]))
    assert "script" not in page.tags and len(page.pres) == 1 and "</details><script>" in page.pres[0]


def test_escaping_of_single_values():
    for value in ["a|b", "x`y", "<b>", "p\nq", "*e* _u_", "[l](u)", "&amp;", "@someone", "\\|"]:
        cell = rendered(f"| h |\n| --- |\n| {esc(value)} |\n| {code(value)} |\n")
        body = cell.tables[0][1:]
        shown = value.replace("\n", "\\n")
        assert body[0][0].replace("\u2060", "") == shown and body[1][0] == shown, (value, body)
        assert set(cell.tags) <= {"table", "thead", "tbody", "tr", "th", "td", "code"}, (value, cell.tags)


def test_output_stays_under_the_cap_and_says_what_was_left_out(report):
    full = render_markdown(report)
    assert len(full.encode()) < MAX_BYTES and "Truncated" not in full
    # just too small for every diff: diffs go first, every row stays
    cap = len(full.encode()) - 1
    fewer = render_markdown(report, max_bytes=cap)
    page = rendered(fewer)
    assert len(fewer.encode()) <= cap
    assert "Truncated" in "".join(page.text) and "diffs and JSON change lists are left out" in fewer
    assert [len(t) for t in drift_tables(page)] == [len(t) for t in drift_tables(rendered(full))]
    assert sum(1 for p in page.pres if p.startswith("---")) < 2
    # far too small: rows go too, and the notice says how many are shown
    small = render_markdown(report, max_bytes=2500)
    assert len(small.encode()) <= 2500
    page = rendered(small)
    text = "".join(page.text)
    assert "Truncated to stay under 2,500 bytes" in text and "rows are shown" in text
    assert not page.pres
    shown = sum(len(t) - 1 for t in drift_tables(page))
    assert 0 < shown < len(report.drifts)
    assert f"only the first {shown} of" in text
    # smaller than the counts: still capped, still stated
    tiny = render_markdown(report, max_bytes=700)
    assert len(tiny.encode()) <= 700 and "Truncated" in tiny


def test_clean_report_says_no_drift(report):
    clean = report.model_copy(update={"drifts": [], "summary": report.summary.model_copy(update={"drifts": 0})})
    page = rendered(render_markdown(clean))
    assert "driftscan: no drift" in "".join(page.text) and not drift_tables(page)


def test_cli_markdown_format(scenario):
    proc = run_cli("audit", "--venv", str(scenario.venv), "--wheels", str(scenario.house), "--format", "markdown")
    assert proc.returncode & 1, proc.stderr
    page = rendered(proc.stdout)
    assert proc.stdout.startswith("## driftscan: ") and len(drift_tables(page)) == 3
    assert "script" not in page.tags and "img" not in page.tags


def test_cli_diff_renders_markdown_too(tmp_path, scenario):
    baseline = tmp_path / "baseline.json"
    proc = run_cli("snapshot", "--venv", str(scenario.venv), "-o", str(baseline))
    assert proc.returncode == 0, proc.stderr
    added = scenario.venv / "bin" / "x|y<b>.sh"
    added.write_text("echo\n")
    try:
        proc = run_cli("diff", str(baseline), "--format", "markdown")
    finally:
        added.unlink()
    assert proc.returncode & 1, proc.stderr
    page = rendered(proc.stdout)
    rows = [row for table in drift_tables(page) for row in table[1:]]
    assert ["added", "bin/x|y<b>.sh (5 bytes)"] == rows[0][:2] and "b" not in page.tags, rows


def test_urls_in_tree_values_make_no_autolink(tmp_path):
    """GitHub links ``www.`` and ``http(s)://`` in text (GFM's extended autolinks), inside
    ``<code>`` too: a tree value shown in a step summary or a PR comment is no link."""
    linkify_it = pytest.importorskip("linkify_it")
    from driftscan.api import run
    from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden": 16}\n')
    write_manifest(str(model), build_manifest(str(model)), str(model / MANIFEST_NAME))
    (model / "config.json").write_text('{"hidden": 16, "home": "https://evil.example/x", "w": "WWW.evil.example"}\n')
    (model / "see www.evil.example and HTTP:").mkdir()
    (model / "see www.evil.example and HTTP:" / "x.txt").write_text("x\n")
    report = run(model_dirs=[str(model)], compare=False).report
    markdown = render_markdown(report)
    md = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "linkify"])
    md.linkify = linkify_it.LinkifyIt(options={"fuzzy_link": True, "fuzzy_email": True})
    html = md.render(markdown)
    assert "evil.example" in html and "<a " not in html, html
    # the GFM rules themselves: no www. and no scheme:// left in the text (the word joiner breaks them)
    assert not re.search(r"(?i)www\.|(?:https?|ftp)://", markdown), markdown


def test_dumps_and_sizes_in_their_cells():
    """A dump's whole pattern with its count and readable size; an added file's size in KB, not bytes."""
    import dataclasses

    from fixtures.reports import every_kind_report

    report = every_kind_report()
    added = next(d for d in report.drifts if d.kind.value == "added")
    report = dataclasses.replace(report, drifts=[*report.drifts,
                                                 dataclasses.replace(added, relpath="big.bin", path="/x/big.bin",
                                                                     actual={"type": "file", "size": 3_200})])
    markdown = render_markdown(report)
    assert "<code>/tmp/dbg&#95;&#42;.pt</code> (2 files, 2.0 MB)" in markdown
    assert "<code>/tmp/old&#95;&#42;.pt</code> (1 file, 10 bytes, older than the code that writes them)" in markdown
    assert "<code>big.bin</code> (3.2 KB)" in markdown
    assert "<code>stray&#95;patch.py</code> (42 bytes)" in markdown
