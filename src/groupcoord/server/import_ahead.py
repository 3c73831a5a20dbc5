"""What the broker imports ahead of use, on a worker thread while its event loop answers
ApiVersions (`Broker.start`), so a client's first requests do not import their handlers on
the loop."""

from __future__ import annotations

import sys
from importlib import import_module

# What `start` loads after the listeners are bound: imported on a worker thread first, so the
# event loop stays free to answer ApiVersions while the bulk of the broker's code loads. The
# Metadata handler comes first: every client sends Metadata once ApiVersions is answered,
# and the loop imported it itself (20-30 ms of CPU) while this thread held the GIL too.
LOADED_AFTER_BIND = (
    "groupcoord.apis.metadata",
    "groupcoord.storage.manager",
    "groupcoord.server.authorization",
    "groupcoord.server.fetch_sessions",
    "groupcoord.server.log_cleaner",
    "groupcoord.server.txn_log",
    "groupcoord.server.topics",
    "groupcoord.server.runtime.coordinator_runtime",
    "groupcoord.server.share_runtime",
    "groupcoord.server.transactions",
    # The CRC32C implementation, bound on its first use (`logformat.batch`): after a clean
    # stop nothing is CRC-checked before the first snapshot read on the loop, and importing
    # the package there (with importlib.metadata) held the loop for 40-55 ms.
    "crc32c",
)
# The handlers of the other requests every consumer or producer sends first: imported on a
# worker thread while the logs load, so a client's first request of each kind, once the
# broker serves, does not import its handler on the loop (5-30 ms of CPU each).
CLIENT_HANDLERS = tuple(f"groupcoord.apis.{name}" for name in (
    "find_coordinator", "offset_fetch", "offset_commit", "join_group", "sync_group",
    "heartbeat", "leave_group", "consumer_group_heartbeat", "list_offsets", "fetch",
    "produce", "init_producer_id"))


def import_ahead(names: tuple[str, ...]) -> None:
    """Import `names` ahead of their use; a failure is left to the real import, which
    reports it where its caller can handle it. Skipped where imports parse source into
    `ast` objects (see `imports_build_ast`): the real imports then run on the loop."""
    if imports_build_ast():
        return
    for name in names:
        try:
            import_module(name)
        except Exception:  # noqa: BLE001, S112 - re-raised by the real import
            continue


def imports_build_ast() -> bool:
    """True under pytest's assertion rewriting, which parses our modules with `ast.parse`
    (groupcoord is a pytest plugin, so pytest rewrites the whole package). CPython 3.11
    counts the depth of its AST conversion per interpreter, not per thread (gh-106905): a
    module parsed on a worker thread while the loop's thread parses another one fails to
    import with "SystemError: AST constructor recursion depth mismatch"."""
    return any(type(finder).__name__ == "AssertionRewritingHook" for finder in sys.meta_path)
