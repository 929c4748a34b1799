"""Message templates (``string.Template``) the operator can override, and the default wording.

Placeholders: ``$heading``, ``$workflow``, ``$run_id``, ``$node_id``, ``$kind``, ``$title``,
``$description``, ``$asked`` (the artifact or the questions, shortened), ``$deadline``,
``$link`` (the recipient's personal link; empty when there is none), ``$link_line`` (a sentence
with the link, or why there is none), ``$inbox`` / ``$inbox_line`` (the recipient's inbox link,
alone or in a sentence; empty without one), ``$recipient``. In the HTML template every value is
already HTML-escaped. Unknown placeholders are left as written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from string import Template

__all__ = ["DEFAULT_HTML", "DEFAULT_SUBJECT", "DEFAULT_TEXT", "Templates"]

DEFAULT_SUBJECT = "[$workflow] $heading: $title"
DEFAULT_TEXT = """$heading

$title
$description

What is asked:
$asked

Workflow: $workflow
Run: $run_id
Step: $node_id
Deadline: $deadline

$link_line

$inbox_line
"""
DEFAULT_HTML = """<!doctype html>
<html><body style="font-family: sans-serif; max-width: 40em">
<h2>$heading</h2>
<h3>$title</h3>
<p>$description</p>
<p><strong>What is asked:</strong></p>
<pre style="white-space: pre-wrap">$asked</pre>
<table>
<tr><td>Workflow</td><td>$workflow</td></tr>
<tr><td>Run</td><td>$run_id</td></tr>
<tr><td>Step</td><td>$node_id</td></tr>
<tr><td>Deadline</td><td>$deadline</td></tr>
</table>
<p>$link_html</p>
<p>$inbox_html</p>
</body></html>
"""


@dataclass(frozen=True)
class Templates:
    """The subject, plain-text and HTML templates of every notification."""

    subject: str = DEFAULT_SUBJECT
    text: str = DEFAULT_TEXT
    html: str = DEFAULT_HTML

    @classmethod
    def from_dir(cls, folder: str | os.PathLike[str]) -> Templates:
        """Read ``subject.txt``, ``body.txt`` and ``body.html`` from ``folder`` (else the default).

        Raises:
            FileNotFoundError: ``folder`` is not a directory.
        """
        path = Path(folder)
        if not path.is_dir():
            raise FileNotFoundError(f"notify templates: {path} is not a directory")

        def read(name: str, default: str) -> str:
            file = path / name
            return file.read_text(encoding="utf-8") if file.is_file() else default

        return cls(
            subject=read("subject.txt", DEFAULT_SUBJECT).strip(),
            text=read("body.txt", DEFAULT_TEXT),
            html=read("body.html", DEFAULT_HTML),
        )

    def render(self, text_values: dict[str, str], html_values: dict[str, str]) -> tuple[str, str, str]:
        """``(subject, text, html)`` with the placeholders filled in."""
        subject = Template(self.subject).safe_substitute(text_values)
        # A subject is one line: a newline in a title must not start a new mail header.
        subject = " ".join(subject.split())
        return (
            subject,
            Template(self.text).safe_substitute(text_values),
            Template(self.html).safe_substitute(html_values),
        )
