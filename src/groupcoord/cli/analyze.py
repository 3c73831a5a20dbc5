"""`groupcoord analyze`: the Spark analytics pipeline (optional extra `[spark]`).

Without the extra, importing the pipeline fails with ModuleNotFoundError, which `cli.main`
answers in one line naming the extra to install.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.cli import action_options


def main(argv: Sequence[str]) -> int:
    from groupcoord.analytics.driver.cli import COMMANDS
    from groupcoord.analytics.driver.cli import main as analytics_main

    action_options.check_subcommand(list(argv), COMMANDS, [], "groupcoord analyze")
    return int(analytics_main(list(argv)) or 0)
