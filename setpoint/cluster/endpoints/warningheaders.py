"""Warning headers as the apiserver writes them: deduplicated, quoted, and bounded in size.

k8s.io/apiserver/pkg/endpoints/filters/warning.go (the warning recorder): a text already
recorded is dropped; once the texts written pass 4096 runes, every recorded warning is
rewritten cut to 256 runes, and warnings that come after the limit are dropped. Each header is
``299 - "<text>"`` with the text quoted by Go's ``strconv.Quote``
(k8s.io/apimachinery/pkg/util/net/http.go, NewWarningHeader), which refuses text that is not
valid UTF-8: such a warning is not written at all.
"""

from __future__ import annotations

from collections.abc import Iterable

from setpoint.machinery.gofmt import go_quote

TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256


def _valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def warning_headers(texts: Iterable[str]) -> list[str]:
    """The ``Warning`` header values for the warnings a request recorded, in order."""
    ordered: list[str] = []
    seen: set[str] = set()
    written = 0
    truncating = False
    headers: list[str] = []
    for text in texts:
        if not text:
            continue
        if truncating and written >= TRUNCATE_AT_TOTAL_RUNES:
            break  # (the recorder returns early for every later warning)
        if text in seen:
            continue
        seen.add(text)
        ordered.append(text)
        if not _valid_utf8(text):
            continue
        shown = text[:TRUNCATE_ITEM_RUNES] if truncating else text
        if written + len(shown) <= TRUNCATE_AT_TOTAL_RUNES or truncating:
            written += len(shown)
            headers.append(f"299 - {go_quote(shown)}")
            continue
        # over the limit: start again with every warning so far cut short
        truncating = True
        written = 0
        headers = []
        for earlier in ordered:
            if not _valid_utf8(earlier):
                continue
            cut = earlier[:TRUNCATE_ITEM_RUNES]
            written += len(cut)
            headers.append(f"299 - {go_quote(cut)}")
    return headers
