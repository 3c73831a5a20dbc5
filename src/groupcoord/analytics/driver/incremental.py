"""``analyze run --incremental --checkpoint DIR``: append what is new, then rebuild gold.

Each of the three source tables is a streaming query over the ``kafkalog`` stream reader
(``analytics.stream``) with ``trigger(availableNow=True)``: it reads every complete batch
past its checkpointed (partition, log offset), appends the rows to the same Parquet table
the batch run writes (``silver/offset_commits``, ``silver/end_offsets``,
``bronze/coord_records``) and stops. Spark's file sink records committed files in
``_spark_metadata``, so a run killed halfway leaves no duplicate rows behind: the next run
replays the uncommitted micro-batch and readers only see committed files. The gold tables,
the driver-side tables and the outputs are then rebuilt from the whole silver/bronze data,
exactly as in a batch run.

Keep one ``OUT`` per checkpoint: a batch ``run`` into the same ``OUT`` would overwrite the
tables without the checkpoint knowing. Filters (``--groups/--since/--until``) apply to the
rows appended by each run, so change them only together with a fresh ``OUT`` and checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groupcoord.analytics.driver.pipeline import (
    INGEST_STAGES,
    TABLE_PATHS,
    RunConfig,
    Stages,
    load_ingested,
    source_frames,
)
from groupcoord.analytics.read.stream import read_gaps

GAP_LOG = "gaps.jsonl"


def append_new(spark: Any, cfg: RunConfig, checkpoint: str | Path, st: Stages) -> dict[str, int]:
    """Run the three streaming queries to completion; returns the rows appended per table."""
    ckpt = Path(checkpoint)
    ckpt.mkdir(parents=True, exist_ok=True)
    out = Path(cfg.out_dir)
    frames = source_frames(spark, cfg, stream=True, options={"gap_log": str(ckpt / GAP_LOG)})
    appended = {}
    for name, df in frames.items():
        query = (df.writeStream.format("parquet").outputMode("append")
                 .option("path", str(out / TABLE_PATHS[name]))
                 .option("checkpointLocation", str(ckpt / name))
                 .queryName(f"kafkalog_{name}").trigger(availableNow=True).start())
        query.awaitTermination()
        appended[name] = sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)
        st.done(INGEST_STAGES[name] + " (incremental)", f"{appended[name]} new rows")
    return appended


def make_ingest(checkpoint: str | Path) -> Any:
    """An ``ingest_fn`` for ``run.run``: incremental append, then the usual re-read."""

    def ingest(spark: Any, cfg: RunConfig, st: Stages) -> dict[str, Any]:
        appended = append_new(spark, cfg, checkpoint, st)
        gaps = read_gaps(Path(checkpoint) / GAP_LOG)
        if gaps:
            skipped = sum(g["skipped_offsets"] for g in gaps)
            st.progress(f"warning: {skipped} offsets were deleted or cleaned before they "
                        f"could be read ({len(gaps)} gaps, see {Path(checkpoint) / GAP_LOG})")
        ing = load_ingested(spark, cfg, st)
        ing["appended"] = appended
        ing["incremental"] = True
        return ing

    return ingest
