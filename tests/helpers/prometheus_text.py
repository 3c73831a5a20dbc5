"""Reading the Prometheus text format in tests: samples by name and labels."""

from __future__ import annotations

import re
import urllib.request

Labels = frozenset[tuple[str, str]]
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[str, dict[Labels, float]]:
    """name -> labels -> value; comments and blank lines skipped."""
    out: dict[str, dict[Labels, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match is not None, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        pairs = frozenset((k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
                          for k, v in _LABEL.findall(labels or ""))
        out.setdefault(name, {})[pairs] = float(value)
    return out


def scrape(url: str, timeout: float = 10.0, *,
           content_type: str | None = "text/plain; version=0.0.4"
           ) -> dict[str, dict[Labels, float]]:
    """The samples at `url`; `content_type`: what the answer's type must start with (None:
    any, for an exporter that labels its text otherwise)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        assert response.status == 200
        if content_type is not None:
            assert response.headers["Content-Type"].startswith(content_type)
        return parse(response.read().decode())


def value(samples: dict[str, dict[Labels, float]], name: str, **labels: str) -> float:
    """The one sample of `name` whose labels include `labels`."""
    want = set(labels.items())
    found = [v for k, v in samples.get(name, {}).items() if want <= k]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples in {samples.get(name)}"
    return found[0]
