"""Make untrusted ids (reviewer, model, store path) safe to show in each output format.

Reviewer and model ids come from whoever wrote the store, so they are hostile text:

- **CSV**: a cell starting with ``=``, ``+``, ``-``, ``@``, TAB or CR is run as a formula by
  spreadsheet programs (CSV injection). OWASP's mitigation: prefix a single quote so the
  cell is read as text, and quote the cell (OWASP, "CSV Injection",
  https://owasp.org/www-community/attacks/CSV_Injection). Applied to text cells only: the
  numeric cells are numbers this program wrote (a negative estimate must stay a number).
- **Terminal text**: control characters (C0, DEL, C1: ESC sequences can move the cursor,
  retitle the window or hide lines) and the Unicode bidi controls (U+202A-202E,
  U+2066-2069, U+200E/200F, U+061C: "Trojan Source", Boucher & Anderson 2021) are replaced
  by a visible ``\\uXXXX`` escape, so two ids that differ only in such a character still
  print differently.
- **SVG labels**: a long id is shortened in the middle (head and tail kept, since ids that
  share a long prefix usually differ at the end), with the full id in a ``<title>``
  tooltip; labels that would still collide get a ``#n`` suffix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: first characters a spreadsheet treats as the start of a formula (OWASP)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

#: DEL, the C1 controls and the bidi controls: unsafe in any text shown on a terminal
_UNSAFE_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE_FOR_TERMINAL = re.compile(f"[\x00-\x1f{_UNSAFE_BEYOND_C0}]")
#: the same but line feed and tab: what a multi-line text keeps
_UNSAFE_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE_BEYOND_C0}]")

#: characters of a label that fit left of a forest plot's axis at 11px
LABEL_MAX_CHARS = 26


def csv_text_cell(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def terminal_safe(text: str) -> str:
    """``text`` with control and bidi-override characters shown as ``\\uXXXX`` escapes."""
    return _UNSAFE_FOR_TERMINAL.sub(_escaped, text)


def terminal_safe_lines(text: str) -> str:
    """:func:`terminal_safe` for multi-line text (a model's answer): line feeds and tabs
    stay, a CRLF becomes a line feed, every other control character (a lone CR, which
    would overwrite the line, included) is escaped."""
    return _UNSAFE_IN_LINES.sub(_escaped, text.replace("\r\n", "\n"))


def ellipsize_middle(text: str, max_chars: int = LABEL_MAX_CHARS) -> str:
    """``text`` shortened to ``max_chars`` by replacing its middle with one ``…``."""
    if len(text) <= max_chars:
        return text
    keep = max_chars - 1
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + "\u2026" + (text[-tail:] if tail else "")


def distinct_labels(ids: Sequence[str], max_chars: int = LABEL_MAX_CHARS) -> list[str]:
    """Short, terminal-safe labels for ``ids`` that stay distinct when the ids are.

    Two different ids whose shortened forms coincide get ``#1``, ``#2``... (in input order)
    appended to the shortened form, so a reader can still tell them apart; the full id is
    in the tooltip.
    """
    short = [ellipsize_middle(terminal_safe(item), max_chars) for item in ids]
    owners: dict[str, set[str]] = {}
    for label, item in zip(short, ids, strict=True):
        owners.setdefault(label, set()).add(item)
    seen: dict[str, list[str]] = {}
    labels = []
    for label, item in zip(short, ids, strict=True):
        if len(owners[label]) == 1:
            labels.append(label)
            continue
        order = seen.setdefault(label, [])
        if item not in order:
            order.append(item)
        suffix = f" #{order.index(item) + 1}"
        labels.append(ellipsize_middle(terminal_safe(item), max_chars - len(suffix)) + suffix)
    return labels
