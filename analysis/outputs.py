"""Write an Analysis to a directory: report.md, report.html (self-contained: its figures embedded),
cells.csv, axes.csv and the PNG figures; and the JSON summary to a file of its own."""

from __future__ import annotations

from pathlib import Path

from agentrel.analysis.decisions.certificates import CertificateReport, certificate_section
from agentrel.analysis.export import axes_export_frame, cells_export_frame, write_csv
from agentrel.analysis.figures import write_figures
from agentrel.analysis.pipeline import Analysis
from agentrel.analysis.render import to_html, to_markdown
from agentrel.analysis.report_doc import build_document
from agentrel.analysis.summary import build_summary


def write_report(
    analysis: Analysis,
    out_dir: Path,
    *,
    figures: bool = True,
    certificates: CertificateReport | None = None,
) -> list[Path]:
    """Write the report files into out_dir (created if needed); returns the paths written. With
    `certificates`, the report ends with their section and certificates.json is written beside it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    names = write_figures(analysis.cells, analysis.pools, out_dir, analysis.axes) if figures else {}
    doc = build_document(analysis, names)
    if certificates is not None:
        doc.sections.append(certificate_section(certificates))
        (out_dir / "certificates.json").write_text(certificates.model_dump_json(indent=1) + "\n", "utf-8")
    written = [out_dir / n for n in names.values()]
    # report.md links the PNGs beside it; report.html carries them, so it can travel alone.
    pngs = {n: (out_dir / n).read_bytes() for n in names.values()}
    (out_dir / "report.md").write_text(to_markdown(doc), encoding="utf-8")
    (out_dir / "report.html").write_text(to_html(doc, pngs), encoding="utf-8")
    write_csv(cells_export_frame(analysis.cells, analysis.alpha, analysis.plan), out_dir / "cells.csv")
    write_csv(axes_export_frame(analysis.axes), out_dir / "axes.csv")
    paths = ["report.md", "report.html", "cells.csv", "axes.csv"]
    paths += ["certificates.json"] if certificates is not None else []
    return [*(out_dir / p for p in paths), *written]


def write_summary_json(analysis: Analysis, path: Path) -> Path:
    """The machine-readable summary (analysis.summary.Summary) as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_summary(analysis).to_json() + "\n", encoding="utf-8")
    return path
