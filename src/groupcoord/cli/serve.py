"""`groupcoord serve`: run the broker until SIGINT/SIGTERM.

Prints exactly one line per listener, `groupcoord listening on HOST:PORT (NAME)`, to stderr once
it accepts connections (tests wait for it). Uses uvloop when importable. On a signal it
stops accepting, closes connections, stops the coordinator shards and flushes and closes
every log before exiting 0.

Start-up time to the first ApiVersions answer is part of the contract (tests start many
brokers, clients retry sooner than a slow start): the cyclic collector is paused before
asyncio is imported (`server.runtime.heap`; `cli.main` already pauses it when it dispatches to
`serve`), and what the broker needs only after its listeners are
bound is imported there (`Broker.start`), not here. `tests/cli/test_serve_startup_path.py`
names what may not be imported before the bind.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Coroutine, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from groupcoord.cli import options, security_args
from groupcoord.cli.main import UsageError
from groupcoord.cli.options import Option
from groupcoord.server.config import (
    DEFAULT_MAX_REQUEST_SIZE,
    METRICS_MAX_GROUPS_DEFAULT,
    BrokerConfig,
    Listener,
)
from groupcoord.server.connection_quotas import INT_MAX
from groupcoord.server.idle_expiry import CONNECTIONS_MAX_IDLE_MS_DEFAULT
from groupcoord.storage.dir_lock import DataDirLocked
from groupcoord.storage.fileio import MEMORY, OS_FILE_IO, FileIO

if TYPE_CHECKING:
    import argparse

log = logging.getLogger("groupcoord")


def _help_width() -> int:
    """The width argparse gives help by default (`shutil.get_terminal_size`: `COLUMNS`,
    else the terminal's, else 80; less 2)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            columns = os.get_terminal_size().columns
        except OSError:
            columns = 80
    return max(columns, 1) - 2


#: Every `groupcoord serve` option, in the order of `--help`.
OPTIONS: tuple[Option, ...] = (
    Option("--listen", kind="append", default=None, metavar="HOST:PORT",
           help="address to listen on (repeatable; default 127.0.0.1:9092)"),
    Option("--advertised-listener", kind="append", default=None,
           metavar="[NAME://]HOST:PORT",
           help="address given to clients of a listener in Metadata/FindCoordinator "
                "(repeatable, one per listener name; HOST:PORT: the first listener)"),
    Option("--data-dir", default="./data",
           help="log directory (default ./data); `memory` keeps every log in memory, "
                "for tests (gone when the broker stops)"),
    Option("--storage", default=None, metavar="postgresql://USER@HOST:PORT/DB",
           help="keep every partition and the topic catalog in this PostgreSQL database, "
                "shared by the nodes started on it (docs/cluster.md); --data-dir then holds "
                "this node's copies and caches (default: everything in --data-dir)"),
    Option("--broker-session-timeout-ms", type=int, default=9000,
           help="with --storage: how long a node's partition leases outlive its last "
                "renewal (broker.session.timeout.ms)"),
    Option("--broker-heartbeat-interval-ms", type=int, default=2000,
           help="with --storage: how often a node renews its partition leases "
                "(broker.heartbeat.interval.ms)"),
    Option("--node-id", type=int, default=0, help="this broker's node id (node.id)"),
    Option("--nodes", type=int, default=1,
           help="nodes served by this process: ids node-id.., node i on each listen "
                "port + i, partitions and coordinators spread over them (default 1)"),
    Option("--cluster-id", default=None,
           help="cluster id (default: stored in the data dir, else generated)"),
    Option("--fsync", choices=("always", "interval", "never"), default="interval",
           help="when appended records are flushed to disk: before each acknowledgement, "
                "every --fsync-interval-ms, or never (the OS decides)"),
    Option("--fsync-interval-ms", type=int, default=1000,
           help="flush interval of --fsync interval (log.flush.interval.ms)"),
    Option("--auto-create-topics", kind="switch", default=True,
           help="create a topic on its first Metadata or Produce request "
                "(auto.create.topics.enable)"),
    Option("--default-partitions", type=int, default=1,
           help="partitions of an auto-created topic (num.partitions)"),
    Option("--group-initial-rebalance-delay-ms", type=int, default=3000,
           help="wait for more members before a new classic group's first rebalance "
                "(group.initial.rebalance.delay.ms)"),
    Option("--offsets-partitions", type=int, default=50,
           help="partitions of __consumer_offsets (offsets.topic.num.partitions)"),
    Option("--group-config", kind="append", default=[], metavar="NAME=VALUE",
           help="a group coordinator or transaction setting by its Kafka name, e.g. "
                "group.consumer.session.timeout.ms=45000 (repeatable; default: Kafka's "
                "defaults)"),
    Option("--max-request-size", type=int, default=DEFAULT_MAX_REQUEST_SIZE,
           help="largest request frame accepted (socket.request.max.bytes)"),
    Option("--max-connections", type=int, default=INT_MAX,
           help="broker-wide connection limit; beyond it new connections wait "
                "(max.connections)"),
    Option("--max-connections-per-ip", type=int, default=INT_MAX,
           help="connections allowed from one address; more are closed at once "
                "(max.connections.per.ip)"),
    Option("--max-connections-per-ip-overrides", default="", metavar="HOST:N,...",
           help="per-address limits overriding --max-connections-per-ip "
                "(max.connections.per.ip.overrides)"),
    Option("--connections-max-idle-ms", type=int, default=CONNECTIONS_MAX_IDLE_MS_DEFAULT,
           help="close connections idle this long; -1 never (connections.max.idle.ms)"),
    Option("--authorizer", choices=("none", "standard"), default="none",
           help="ACL enforcement: none allows everything (no authorizer.class.name), "
                "standard is Kafka's StandardAuthorizer with ACLs kept in the data dir"),
    Option("--super-users", default="", metavar="User:a;User:b",
           help="principals allowed everything (super.users)"),
    Option("--allow-everyone-if-no-acl-found", kind="flag", default=False,
           help="allow access to resources without any ACL "
                "(allow.everyone.if.no.acl.found)"),
    Option("--clock", choices=("system", "manual"), default="system",
           help="system: real time; manual: virtual time for tests, standing still "
                "until advanced through --control-listen (docs/testing.md)"),
    Option("--control-listen", default=None, metavar="HOST:PORT",
           help="HTTP/JSON control endpoint for tests: virtual time of a --clock "
                "manual broker, injected faults, group state (docs/testing.md)"),
    Option("--metrics-listen", default=None, metavar="HOST:PORT",
           help="serve Prometheus metrics at /metrics, and /health and /ready, on this "
                "address (docs/metrics.md)"),
    Option("--metrics-max-groups", type=int, default=METRICS_MAX_GROUPS_DEFAULT, metavar="N",
           help="groups exported by name on /metrics, the first N by group id (default "
                f"{METRICS_MAX_GROUPS_DEFAULT})"),
    Option("--metrics-cluster-name", default=None, metavar="NAME",
           help="the cluster_name label of the lag metrics (default: the cluster id)"),
    *security_args.OPTIONS,
    Option("--log-level", default="info",
           choices=("debug", "info", "warning", "error"), help="least severe log lines shown"),
)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of OPTIONS: `--help`, and command lines `parse_plain` leaves."""
    import argparse

    # argparse makes a help formatter for every `add_argument` (to check its metavar), and
    # the default one asks the terminal for its size each time, importing shutil: asked
    # once here instead.
    width = _help_width()
    p = argparse.ArgumentParser(
        prog="groupcoord serve", description="Run the broker.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=width))
    options.add_to(p, OPTIONS)
    return p


def parse_args(argv: Sequence[str]) -> SimpleNamespace:
    """The options of `argv`: read from OPTIONS without argparse when the command line is
    plain (start-up time), else by argparse (help, abbreviations, errors exit here)."""
    plain = options.parse_plain(OPTIONS, argv)
    return plain if plain is not None else SimpleNamespace(**vars(build_parser().parse_args(argv)))


# The options whose value is, as given, the BrokerConfig field of the same name.
_SETTINGS_AS_GIVEN = (
    "storage", "broker_session_timeout_ms", "broker_heartbeat_interval_ms", "node_id", "nodes",
    "fsync", "fsync_interval_ms", "auto_create_topics", "default_partitions",
    "group_initial_rebalance_delay_ms", "offsets_partitions", "max_request_size",
    "max_connections", "max_connections_per_ip", "max_connections_per_ip_overrides",
    "connections_max_idle_ms", "authorizer", "super_users", "allow_everyone_if_no_acl_found",
    "metrics_max_groups",
)


def config_from_args(ns: SimpleNamespace) -> BrokerConfig:
    """The broker's configuration; the cluster id is read from the data dir (or made up),
    and stored by the broker once it has bound its listeners."""
    from groupcoord.server.cluster_id import new_cluster_id, stored_cluster_id

    io: FileIO = OS_FILE_IO
    data_dir = ns.data_dir
    if data_dir == MEMORY:
        from groupcoord.storage.memory_io import MemoryFileIO, memory_data_dir

        io, data_dir = MemoryFileIO(), memory_data_dir()
    elif os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise ValueError(f"--data-dir {data_dir} is not a directory")
    try:
        cluster_id = ns.cluster_id or stored_cluster_id(data_dir, io) or new_cluster_id()
    except OSError as exc:  # a path through a file, a directory we may not read
        raise ValueError(f"--data-dir {data_dir}: {exc.strerror or exc}") from None
    if ns.storage is not None:
        cluster_id = _storage_cluster_id(ns.storage, ns.cluster_id, cluster_id)
    given = vars(ns)
    return BrokerConfig(
        **security_args.config_kwargs(ns),
        **{name: given[name] for name in _SETTINGS_AS_GIVEN},
        data_dir=data_dir,
        file_io=io,
        cluster_id=cluster_id,
        extra=_group_configs(ns.group_config),
        runtime_metrics=ns.metrics_listen is not None,
    )


def _storage_cluster_id(storage: str, given: str | None, proposed: str) -> str:
    """The cluster id of the nodes on `--storage`: the one its first node stored there
    (`proposed` if this is the first); a `--cluster-id` naming another is refused."""
    from groupcoord.storage.config import StorageError
    from groupcoord.storage.postgres_catalog import cluster_id
    from groupcoord.storage.postgres_session import PostgresSession
    from groupcoord.storage.postgres_store import ensure_schema

    try:
        with PostgresSession.for_conninfo(storage) as session:
            ensure_schema(session)
            stored = cluster_id(session, given or proposed)
    except StorageError as exc:
        raise ValueError(f"--storage: {exc}") from None
    if given is not None and given != stored:
        raise ValueError(f"--cluster-id {given}: the nodes on --storage form cluster {stored}")
    return stored


def _group_configs(items: list[str]) -> dict[str, str]:
    """`--group-config NAME=VALUE` settings, checked at start-up as Kafka checks its
    configs: an unknown name or a bad value fails here, not later."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--group-config must be NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    if not out:
        return out
    from groupcoord.coordinator.config import GroupCoordinatorConfig

    known = set(GroupCoordinatorConfig.property_names())
    if not known.issuperset(out):
        from groupcoord.server import transactions  # only then: it is heavy to import

        known.update(transactions.CONFIG_NAMES)
        for name in out:
            if name not in known:
                raise ValueError(_unknown_group_config(name, known))
        transactions.check_configs(out)
    GroupCoordinatorConfig.from_properties(out)
    return out


def _unknown_group_config(name: str, known: set[str]) -> str:
    from difflib import get_close_matches

    close = get_close_matches(name, sorted(known), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown --group-config name {name}{hint}"


def _control_listener(ns: SimpleNamespace) -> Listener | None:
    """The control endpoint: the way to advance a manual clock (so it needs one), and to
    move coordinators and stop and start nodes (`testing.cluster_control`)."""
    if ns.clock == "manual" and ns.control_listen is None:
        raise ValueError("--clock manual needs --control-listen (the way to advance it)")
    return Listener.parse(ns.control_listen) if ns.control_listen is not None else None


def _metrics_listener(ns: SimpleNamespace) -> Listener | None:
    if ns.metrics_listen is None:
        return None
    try:
        return Listener.parse(ns.metrics_listen)
    except ValueError as exc:
        raise ValueError(f"--metrics-listen: {exc}") from exc


async def serve(config: BrokerConfig, control_listen: Listener | None = None,
                manual_clock: bool = False, metrics_listen: Listener | None = None,
                metrics_cluster_name: str | None = None) -> None:
    """Run until a signal; with `control_listen`, controlled through it (and with
    `manual_clock`, on virtual time advanced through it); with `metrics_listen`, serving
    Prometheus metrics there (`server.metrics`)."""
    from groupcoord.server.fd_limits import raise_nofile_limit
    from groupcoord.server.runtime import gil

    raise_nofile_limit()  # connections and log segments share the descriptor table
    switch_interval = gil.favour_the_loop()  # worker threads must not hold up the answers
    try:
        await _serve_broker(config, control_listen, manual_clock, metrics_listen,
                            metrics_cluster_name)
    finally:
        gil.restore(switch_interval)


async def _serve_broker(config: BrokerConfig, control_listen: Listener | None,
                        manual_clock: bool, metrics_listen: Listener | None,
                        metrics_cluster_name: str | None) -> None:
    import asyncio
    import signal

    from groupcoord.server.broker import Broker

    control = None
    if control_listen is None:
        broker = Broker(config)
    else:
        from groupcoord.testing.control import ControlServer
        from groupcoord.testing.virtual_clock import LoopManualClock

        clock = LoopManualClock() if manual_clock else None
        broker = Broker(config, clock=clock)
        control = ControlServer(clock, lambda: broker)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from groupcoord.server.runtime import heap

    heap.settle_step()  # the modules imported so far, before any client waits
    starting = loop.create_task(broker.start())
    metrics = None
    if metrics_listen is not None:
        # Bound once the Kafka listeners are (nothing is added before them), while the
        # broker loads, so /ready answers 503 until loading is done.
        listening = loop.create_task(broker.listening.wait())
        await asyncio.wait((starting, listening), return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if starting.done() and starting.exception() is not None:
            await starting  # start-up failed: its error, not a metrics endpoint
        from groupcoord.server.metrics.http import MetricsOptions, MetricsServer

        metrics = MetricsServer(broker, MetricsOptions(
            metrics_cluster_name or config.cluster_id, config.metrics_max_groups))
        try:
            port = await metrics.start(metrics_listen.host, metrics_listen.port)
        except OSError:
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
            await broker.stop()
            raise
        log.info("groupcoord metrics listening on %s:%d", metrics_listen.host, port)
    try:
        await starting
    except BaseException:
        if metrics is not None:
            await metrics.stop()
        raise
    for _ in heap.collect_young_first():
        await asyncio.sleep(0)  # requests are answered between the collections
    heap.settle_after_start()  # out of the cyclic GC's reach: every full collection is cheaper
    if control is not None and control_listen is not None:
        port = await control.start(control_listen.host, control_listen.port)
        log.info("groupcoord control listening on %s:%d (%s)", control_listen.host, port,
                 "virtual time" if manual_clock else "system time")
    for bound in broker.bound:
        log.info("groupcoord listening on %s:%d (%s)", bound.host, bound.port, bound.name)
    for node_id, ports in broker.node_ports.items():
        if node_id != config.node_id:
            log.info("groupcoord node %d listening on %s", node_id,
                     ", ".join(f"{listener.host}:{port}"
                               for listener, port in zip(config.listeners, ports, strict=True)))
    try:
        await stop.wait()
    finally:
        log.info("groupcoord shutting down")
        if control is not None:
            await control.stop()
        if metrics is not None:
            await metrics.stop()
        await broker.stop()


def _run(main_coro: Coroutine[Any, Any, None]) -> None:
    import asyncio

    try:
        import uvloop
    except ImportError:
        asyncio.run(main_coro)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main_coro)


def main(argv: Sequence[str] | None = None) -> int:
    from groupcoord.server.runtime import heap

    heap.pause_until_started()  # `serve` turns it on again once the broker has started
    try:
        return _serve_main(argv)
    finally:
        heap.end_pause()


def _serve_main(argv: Sequence[str] | None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=getattr(logging, ns.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        security_args.check_files(ns)
        config = config_from_args(ns)
        control = _control_listener(ns)
        metrics = _metrics_listener(ns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        _run(serve(config, control, ns.clock == "manual", metrics, ns.metrics_cluster_name))
    except DataDirLocked as exc:
        sys.stderr.write(f"groupcoord serve: {exc}\n")
        return 1
    except (OSError, ValueError) as exc:  # ports, key material, users file, mapping rules
        raise UsageError(f"cannot start: {_reason(exc)}", status=1) from None
    return 0


def _reason(exc: Exception) -> str:
    """An OSError's words and the file it names, without its `[Errno N]` prefix."""
    if not isinstance(exc, OSError) or not exc.strerror:
        return str(exc)
    return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
