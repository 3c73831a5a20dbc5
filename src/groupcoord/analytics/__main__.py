"""``python -m groupcoord.analytics``: the analyze CLI (also the spark-submit entry point)."""

from groupcoord.analytics.driver.cli import main

raise SystemExit(main())
