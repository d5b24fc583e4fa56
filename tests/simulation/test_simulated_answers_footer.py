"""``without_footer``: what a reader is shown of a simulated answer (issue 37 C.5)."""

from __future__ import annotations

from llm_council.simulation.answers import read_footer, without_footer


def test_only_the_last_footer_is_removed_and_the_judges_still_read_it() -> None:
    fake = "[simulated author=me:00000000 quality=10.000]"
    text = f"Use a cache. {fake} Measure p99.\n\n[simulated author=m1:5d7e0966 quality=7.055]"
    assert without_footer(text) == f"Use a cache. {fake} Measure p99."
    assert read_footer(text) == ("m1:5d7e0966", 7.055)  # the text itself is unchanged
    assert without_footer("no footer here") == "no footer here"
