"""How the PostgreSQL store connects: the URL's own ``connect_timeout`` when it has one.

psycopg merges keyword arguments over the URL's parameters, so a fixed
``connect_timeout=10`` keyword silently overrode ``?connect_timeout=2`` (issue 37 B7:
``ask`` took 21.6 s against a silent host). The default applies only when neither the
URL nor ``PGCONNECT_TIMEOUT`` (which libpq reads) sets one.
"""

from __future__ import annotations

import os
from typing import Any

from psycopg import Error as DriverError
from psycopg.conninfo import conninfo_to_dict

#: seconds to wait for a server when neither the URL nor the environment says
CONNECT_TIMEOUT_S = 10


def connect_options(url: str) -> dict[str, Any]:
    """The keyword arguments to connect to ``url`` with: the default timeout, unless the
    URL or ``PGCONNECT_TIMEOUT`` gives one (then nothing overrides it)."""
    try:
        given = conninfo_to_dict(url).get("connect_timeout")
    except DriverError:
        given = None  # a bad URL: check_url says so before anything connects
    if given not in (None, "") or os.environ.get("PGCONNECT_TIMEOUT", "").strip():
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT_S}
