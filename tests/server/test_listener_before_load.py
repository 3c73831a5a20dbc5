"""`Broker.start` binds the listeners before it loads the logs and runtimes: ApiVersions is
answered at once, every other request waits until the broker is ready and is then answered
from the loaded data dir; a load that fails closes the listener again."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from broker_inproc import RawClient, make_config, run, settle

from groupcoord.logformat.batch import build_batch
from groupcoord.server.broker import Broker
from groupcoord.storage.manager import LogManager
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)

TOPIC = "orders"
# Loop turns given to a held request to (wrongly) come back before the broker is ready.
TURNS = 2_000


def held_broker(data_dir: Path) -> tuple[Broker, asyncio.Event]:
    """A broker whose loading after the bind waits for the returned event."""
    broker = Broker(make_config(data_dir))
    release = asyncio.Event()
    real_load = broker._load

    async def load_when_released() -> None:
        await release.wait()
        await real_load()

    broker._load = load_when_released  # type: ignore[method-assign]
    return broker, release


async def connect(broker: Broker) -> RawClient:
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.bound[0].port)
    return RawClient(reader, writer)


def test_api_versions_is_answered_and_other_requests_wait_until_loaded(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path))
    mgr.get_or_create(TOPIC, 0, os.urandom(16)).append(build_batch([(b"k", b"v", [], 1_000)]))
    mgr.close()

    async def go() -> None:
        broker, release = held_broker(tmp_path)
        starting = asyncio.create_task(broker.start())
        await settle(lambda: broker.bound)
        waiting, asking = await connect(broker), await connect(broker)
        metadata = asyncio.create_task(waiting.call(
            MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12, MetadataResponse))
        versions = await asking.call(ApiVersionsRequest(client_software_name="test",
                                                        client_software_version="1"), 3,
                                     ApiVersionsResponse)
        assert versions.error_code == 0
        assert ApiKey.METADATA in {entry.api_key for entry in versions.api_keys}
        for _ in range(TURNS):
            await asyncio.sleep(0)
        assert not metadata.done() and "logs" not in vars(broker) and not broker.ready.is_set()
        release.set()
        await starting
        answer = await metadata
        # Answered from the loaded data dir: the topic written before start-up is there.
        assert [(t.name, t.error_code, len(t.partitions)) for t in answer.topics] == \
            [(TOPIC, 0, 1)]
        for client in (waiting, asking):
            await client.close()
        await broker.stop()

    run(go())


def test_a_failed_load_closes_the_listener(tmp_path: Path) -> None:
    async def go() -> None:
        broker = Broker(make_config(tmp_path))

        async def broken_load() -> None:
            raise OSError("data dir unreadable")

        broker._load = broken_load  # type: ignore[method-assign]
        with pytest.raises(OSError, match="unreadable"):
            await broker.start()
        with pytest.raises(OSError):
            await connect(broker)
        await broker.stop()

    run(go())
