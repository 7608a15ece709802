"""The reproduce report: results as JSON/CSV, PNG plots, ``report.md`` and ``report.html``.

The report is a list of blocks (``blocks``) rendered to Markdown and to self-contained HTML;
each experiment contributes a section (``sections``), generic unless it has its own.
"""

from evalstop.report.build import ReportFiles, RunInfo, write_report

__all__ = ["ReportFiles", "RunInfo", "write_report"]
