"""`groupcoord analyze`: the Spark analytics pipeline (optional extra `[spark]`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    try:
        from groupcoord.analytics.cli import main as analytics_main
    except ImportError as exc:
        sys.stderr.write(f"groupcoord analyze needs the [spark] extra ({exc}); "
                         "install with: pip install 'groupcoord[spark]'\n")
        return 2
    return int(analytics_main(list(argv)) or 0)
