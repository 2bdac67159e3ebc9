"""`build_report` / `tinylab report`: self-contained markdown and HTML with metrics and charts."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from support.runs import cli, clone_run, profile_tables, with_kernels, world_of

from tinylab.analysis.compare import compare_runs
from tinylab.render.compare import format_value, ratio_text
from tinylab.render.report import build_report
from tinylab.core.errors import UserError

VOID = {"meta", "br", "hr", "img", "input", "link"}
SVG_SHAPES = {"rect", "line", "polyline", "circle", "path"}


class StrictHTML(HTMLParser):
    """Checks nesting (every element closed, in order) and collects tags, attributes and text."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(text: str) -> StrictHTML:
    parser = StrictHTML()
    parser.feed(text)
    parser.close()
    assert parser.stack == [], f"unclosed: {parser.stack}"
    return parser


def summary_values(run) -> list[str]:
    s = run.events().last("summary")
    return [format_value(k, s[k]) for k in ("samples_per_s", "step_ms_median", "final_loss")]


def test_markdown_one_run(finished_pair):
    run = finished_pair.v1
    text = build_report([run], "md")
    assert text.startswith("# tinylab report: 1 run\n")
    assert f"## Run {run.id} (v1, finished)" in text
    for value in summary_values(run):
        assert value in text
    assert "| trained parameter tensors | 20 of 20 |" in text
    charts = re.findall(r"```text\n(.*?)```", text, re.S)
    assert len(charts) == 2, "loss and throughput (CPU runs have no device memory)"
    assert all("┤" in chart and "step" in chart for chart in charts)
    assert "\x1b[" not in text, "no terminal colour codes in a file"
    assert "peak memory per step** (MB): not recorded" in text
    assert "## Comparison" not in text


def test_markdown_two_runs_compares_them(finished_pair):
    a, b = finished_pair.v1, finished_pair.v2
    text = build_report([a, b], "md")
    assert f"## Run {a.id}" in text and f"## Run {b.id}" in text and "## Comparison" in text
    for m in compare_runs(a.record(), b.record()).metrics:
        if m.ratio is not None:
            interval = f" [{m.interval.low:.2f}–{m.interval.high:.2f}]" if m.interval else ""
            assert f"| {ratio_text(m.ratio)}{interval} |" in text  # as compare writes it: 11.5x from 10x up
    overlay = re.findall(r"```text\n(.*?)```", text.split("## Comparison")[1], re.S)[0]
    assert f"A {a.id}" in overlay and f"B {b.id}" in overlay, "overlaid series are labelled"


def test_html_one_and_two_runs_are_self_contained(finished_pair):
    for runs in ([finished_pair.v1], [finished_pair.v1, finished_pair.v2]):
        text = build_report(runs, "html")
        doc = parse_html(text)
        assert doc.tags.count("svg") == 2 * len(runs) + (2 if len(runs) > 1 else 0)
        assert "polyline" in doc.tags and "style" in doc.tags
        assert not {"script", "link", "img", "iframe", "object"} & set(doc.tags)
        assert not [a for a in doc.attrs if a[0] in ("src", "href")], "no external assets"
        assert "url(" not in text and "@import" not in text
        body = " ".join(doc.text)
        for run in runs:
            for value in summary_values(run):
                assert value in body
    assert "Comparison" in body and "B/A" in body


def test_html_escapes_run_text(finished_pair, tmp_path):
    evil = "<script>alert('x')</script> & <b>"
    run = clone_run(finished_pair.v1, tmp_path, config={"label": evil},
                    edit=lambda e: e.update(event="error", type="Boom<i>", message=evil, traceback="<tb>")
                    if e["event"] == "summary" else None)
    text = build_report([run, finished_pair.v2], "html")
    doc = parse_html(text)
    assert "script" not in doc.tags and "i" not in doc.tags
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert evil in " ".join(doc.text), "escaped, the text still reads as written"


def test_markdown_passes_no_markup_through(finished_pair, tmp_path):
    """A label or an error message with HTML in it must not become live markup in a Markdown viewer."""
    evil = "<script>alert('x')</script> | `tick`"
    run = clone_run(finished_pair.v1, tmp_path, config={"label": evil},
                    edit=lambda e: e.update(event="error", type="Boom<i>", message=evil, traceback="```\n<tb>")
                    if e["event"] == "summary" else None)
    md = build_report([run, finished_pair.v2], "md")
    assert "<script>" not in md and "<i>" not in md and "&lt;script>" in md
    fence = next(line for line in md.splitlines() if line.startswith("````"))
    assert fence == "````text"  # longer than the traceback's own ``` so that it cannot end the block


def test_top_kernels_and_kernel_diff(finished_pair, tmp_path):
    template = "void gemm<float, 128>(Params<float> | p)"  # <...> and a pipe: HTML and table syntax
    a = with_kernels(finished_pair.v1, tmp_path / "a", [(template, 30, 3e6), ("rmsnorm", 20, 1e6)])
    b = with_kernels(finished_pair.v2, tmp_path / "b", [("gemm_qkv", 10, 2e6), ("rmsnorm", 20, 0.5e6)])
    md = build_report([a, b], "md")
    assert "### Top kernels" in md and "| 1 | `void gemm<float, 128>(Params<float> \\| p)` | 3 ms | 75.0% | 30 |" in md
    assert "| `rmsnorm` | 1 ms | 500 us | 0.50x | 20 -> 20 |" in md
    assert "Kernels only in B (appeared):\n\n| kernel | total | calls |\n|---|---|---|\n| `gemm_qkv` | 2 ms | 10 |" in md
    doc = parse_html(build_report([a, b], "html"))
    body = " ".join(doc.text)
    assert template in body and "Kernels only in B (appeared):" in body and "gemm_qkv" in body


def test_failed_and_running_runs(finished_pair, tmp_path, own_process_record):
    failed = clone_run(finished_pair.v1, tmp_path / "f", drop=("summary",),
                       edit=lambda e: e.update(returncode=1) if e["event"] == "exit" else None)
    with open(failed.dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "error", "type": "FloatingPointError", "message": "loss became nan",
                             "traceback": "Traceback (most recent call last):\n  boom"}) + "\n")
    running = clone_run(finished_pair.v2, tmp_path / "r", drop=("summary", "exit"))
    (running.dir / "process.json").write_text(json.dumps(own_process_record))
    md = build_report([failed, running], "md")
    assert "### Error" in md and "**FloatingPointError**: loss became nan" in md and "  boom" in md
    assert "No summary: the run is failed." in md
    assert "still running" in md
    assert "```text" in md, "steps so far are still charted"
    parse_html(build_report([failed, running], "html"))


def test_cli_writes_files_and_picks_the_format_from_the_suffix(finished_pair, tmp_path):
    root = str(finished_pair.store.root)
    out = tmp_path / "report.html"
    proc = cli("report", finished_pair.v1.id, "last", "-o", str(out), "--runs-dir", root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and f"wrote {out} (html, 2 runs)" in proc.stderr
    parse_html(out.read_text())
    md = cli("report", "last", "--runs-dir", root)
    assert md.returncode == 0 and md.stdout.startswith("# tinylab report: 1 run")
    bad = cli("report", "last", "-o", str(tmp_path / "no" / "such" / "dir.md"), "--runs-dir", root)
    assert bad.returncode == 2 and bad.stderr.startswith("tinylab: error: cannot write") and "Traceback" not in bad.stderr


def test_unknown_format_and_no_runs_are_user_errors(finished_pair):
    with pytest.raises(UserError, match="unknown report format 'pdf'"):
        build_report([finished_pair.v1], "pdf")
    with pytest.raises(UserError, match="at least one run"):
        build_report([], "md")


def test_a_run_of_ranks_gets_a_rank_table_and_a_world_size_comparison_its_scaling(tmp_path):
    one = profile_tables(world_of(tmp_path, "20260101-000000-0001", 1, 100.0), {None: [("aten::mm", 3, 60.0)]})
    two = profile_tables(world_of(tmp_path, "20260101-000000-0002", 2, 180.0, comm_ms=3.5, comm_hidden=0.4),
                         {0: [("aten::mm", 3, 60.0)], 1: [("aten::mm", 3, 90.0)]})
    md = build_report([one, two], "md")
    section = md[md.index("## Run 20260101-000000-0002"):md.index("## Comparison")]
    assert ("### Ranks\n\n2 ranks under ddp. Rank 1 is the slowest (the others wait for it). ✓ weights in sync on "
            "all 2 ranks\n") in section
    assert "| 1 slowest | gpu-node-07 | cpu | 40.80 | 44.00 | 15.60/22.00/6.00 | - | 7.20 (64% hidden) | ✓ in sync |" in section
    assert "| 1 | `aten::mm` | 60 ns |" in section  # rank 0's table, not both ranks' 150 ns
    assert "- the top kernels of rank 0 of 2 ranks (`tinylab hotspots 20260101-000000-0002 --rank N`" in section
    assert "### Ranks" not in md[:md.index("## Run 20260101-000000-0002")]  # one process: no rank table
    comparison = md[md.index("## Comparison"):]
    assert "| A | 1 | 100.0 | 100.0 | - | - |\n| B | 2 | 180.0 | 90.0 | 3.50 | 40% |" in comparison
    assert "scaling efficiency 90% (B's samples/s per rank / A's)" in comparison
    doc = parse_html(build_report([one, two], "html"))
    body = " ".join(doc.text)
    assert "Ranks" in body and "1 slowest" in body and "✓ in sync" in body
    assert "Scaling (samples/s of the whole run, and per rank):" in body and "scaling efficiency 90%" in body


ESCAPES = {"label": "\x1b[31mRED\nrow", "message": "X\x1b]0;pwned\x07: evil\x1b[2J\nfake line",
           "traceback": "Traceback\n  \x1b[2Jclear\n\x9bcsi"}


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_no_control_character_of_a_run_file_reaches_the_report(finished_pair, tmp_path, fmt):
    """The Config table printed a label's ESC raw (`| label | ^[[31mRED row |`): a report is often
    read with cat or less."""
    run = clone_run(finished_pair.v1, tmp_path, config={"label": ESCAPES["label"], "seq_len": "\x1b[2J"},
                    edit=lambda e: e.update(event="error", type="Boom\x1b[1m", message=ESCAPES["message"],
                                            traceback=ESCAPES["traceback"]) if e["event"] == "summary" else None)
    text = build_report([run, finished_pair.v2], fmt)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), [c for c in text if ord(c) < 32 and c != "\n"]
    assert "?[31mRED" in text and "?]0;pwned?: evil?[2J" in text and "?[2Jclear" in text
    if fmt == "md":
        assert "| label | ?[31mRED?row |" in text and "| seq_len | ?[2J |" in text


def test_a_report_of_three_runs_names_each_run_by_its_own_letter(tmp_path):
    """`report A B C` said, in its "C vs A" section, "only run B has a kernel table: profile run A
    too": the profiled run is C."""
    from tinylab.service.lab import Lab

    runs = [world_of(tmp_path, f"20260101-000000-000{i}", 1, 100.0 + i) for i in range(3)]
    profile_tables(runs[2], {None: [("aten::mm", 3, 60.0)]})
    lab = Lab(tmp_path)
    text = build_report([lab.run(r.id) for r in runs], "md", mask=lab.masked)
    b_vs_a, c_vs_a = text.split("### B vs A")[1].split("### C vs A")
    assert "only run C has a kernel table: profile run A too" in c_vs_a
    assert "run B" not in c_vs_a and "kernel table" not in b_vs_a


def test_html_tells_who_is_better_apart_draws_equal_lines_apart_and_ticks_whole_steps(tmp_path):
    """A row where A is better was drawn in the same green as one where B is better, two identical
    loss lines hid each other, and the step axis had a tick at 4.5."""
    from support.runs import make_run

    steps = [{"event": "step", "time": 1.0, "step": k, "loss": 6.9 - 0.1 * k, "step_ms": 40.0} for k in range(8)]
    runs = []
    for name, sps, loss in (("20260101-000000-0001", 100.0, 5.0), ("20260101-000000-0002", 300.0, 6.0)):
        summary = {"event": "summary", "time": 2.0, "samples_per_s": sps, "step_ms_median": 4000 / sps,
                   "step_ms_p10": 3990 / sps, "step_ms_p90": 4010 / sps, "final_loss": loss}
        runs.append(make_run(tmp_path, name, [*steps, summary]))
    page = build_report(runs, "html")
    rows = {re.sub("<[^>]+>", " ", row).split()[0]: row for row in re.findall(r"<tr>.*?</tr>", page)
            if 'class="better"' in row}
    colour = {key: re.search(r'class="better" style="color: (#[0-9a-f]+)"', row).group(1) for key, row in rows.items()}
    assert "B better" in rows["samples/s"] and "A better" in rows["final"]
    assert colour["samples/s"] != colour["final"]
    loss_chart = page.split("<title>loss</title>")[-1]  # the overlay of both runs
    lines = re.findall(r"<polyline [^>]*>", loss_chart.split("</svg>")[0])
    assert len(lines) == 2 and "stroke-dasharray" not in lines[0] and "stroke-dasharray" in lines[1]
    ticks = re.findall(r'text-anchor="middle">([^<]+)</text>', page)
    assert "4.5" not in ticks and "4" in ticks
