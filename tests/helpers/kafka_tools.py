"""Apache Kafka's command-line tools as test clients: `kafka-share-groups.sh` and friends are
classes of the `kafka-tools` jar, which `make kafka-tools` puts with its dependencies in
`.cache/kafka-tools-<version>/libs` (stamped by version, like the reference broker). A tool
runs as `java -cp '<libs>/*' <class> <args>`; its standard output is what the shell script
prints. Nothing here imports groupcoord.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.kraft_node import KAFKA_VERSION, REPO_ROOT, KafkaNodeError, log_event

TOOLS_DIR = REPO_ROOT / ".cache" / f"kafka-tools-{KAFKA_VERSION}"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
RUN_TIMEOUT_S = 60.0


def ensure_tools() -> Path:
    """The libs directory of Kafka's tools, fetched by `make kafka-tools` if missing."""
    stamp = TOOLS_DIR / ".stamp"
    if not (stamp.is_file() and stamp.read_text().strip() == KAFKA_VERSION):
        log_event(f"fetching Apache Kafka {KAFKA_VERSION}'s tools with `make kafka-tools`")
        done = subprocess.run(["make", "--no-print-directory", "kafka-tools"], cwd=REPO_ROOT,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise KafkaNodeError(
                f"`make kafka-tools` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return TOOLS_DIR / "libs"


def run_tool(tool_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's tools to completion (its exit code is the caller's to check)."""
    cmd = ["java", "-Xmx256m", "-cp", f"{ensure_tools()}/*", tool_class, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          check=False)
