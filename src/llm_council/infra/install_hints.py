"""How to install an optional extra, said so that it works and installs nothing of a stranger's.

On the public package index ``llm-council`` is another project: the hint
``pip install 'llm-council[local]'`` installed it. This project's distribution is
:data:`DISTRIBUTION_NAME` (free on the index when chosen, ADR 0055) and is installed from
its checkout, so every "install the extra" message says the command that works there.
The import package stays ``llm_council`` and the command ``llm-council``.
"""

from __future__ import annotations

DISTRIBUTION_NAME = "llm-council-audit"


def extra_install_hint(extra: str) -> str:
    """``pip install -e '.[EXTRA]' (in the llm-council checkout)``: the command that works."""
    return f"pip install -e '.[{extra}]' (in the llm-council checkout)"
