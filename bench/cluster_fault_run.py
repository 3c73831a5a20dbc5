"""The randomized fault run, longer: three groupcoord nodes on one real PostgreSQL (started
in a temporary directory, as the tests' fixture does) under the cluster workload, seeded faults
hitting one node at a time for `--minutes`, then the checker (tests/helpers/fault_run.py; the
CI-sized run is tests/cluster/test_postgres_fault_run.py).

    python -m bench.cluster_fault_run --minutes 10 [--seed N]

Prints each fault and how long the workload took to work again after it (every partition
acknowledging a record, every group committing on every partition and stable), the checker's
verdict and figures, and writes them to bench/results/cluster_fault_run.json. Exits 1 on a
violation.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter

from bench.common import RESULTS_DIR, TESTS_DIR

if str(TESTS_DIR) not in sys.path:
    sys.path.append(str(TESTS_DIR))
from helpers.fault_run import FaultRun, fault_run, three_nodes_on_postgres

# The checker's wording of each kind of violation (helpers.cluster_checks).
VIOLATION_KINDS = (("stored at", "acknowledged record stored elsewhere or twice"),
                   ("stored twice", "unacknowledged record stored twice"),
                   (", lost", "acknowledged record lost"),
                   ("moved back", "committed offset moved back"),
                   ("owned by", "partition owned by two members"),
                   ("transaction", "transaction seen in part or against its outcome"),
                   ("never consumed", "acknowledged records never consumed"),
                   ("fatal", "fatal client error"))


def _kind(violation: str) -> str:
    return next((kind for words, kind in VIOLATION_KINDS if words in violation), "other")


def _figures(run: FaultRun) -> dict[str, object]:
    produce = [r.produce_s for _, r in run.recoveries if r and r.produce_s is not None]
    stable = [s for _, r in run.recoveries if r for s in r.stable_s.values() if s is not None]

    def spread(values: list[float]) -> dict[str, float] | None:
        if not values:
            return None
        return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}
    return {"seed": run.seed, "faults": len(run.faults),
            "faults_recovered_before_the_next": sum(1 for _, r in run.recoveries if r),
            "produce_resumed_s": spread(produce), "group_stable_s": spread(stable),
            "violations": len(run.verdict.violations),
            "violations_by_kind": dict(Counter(_kind(v) for v in run.verdict.violations)),
            "all_violations": run.verdict.violations,
            "checker_figures": run.verdict.figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_fault_run",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="of faults")
    parser.add_argument("--seed", type=int, default=None)
    ns = parser.parse_args(argv)
    seed = ns.seed if ns.seed is not None else random.SystemRandom().randrange(1_000_000)
    print(f"fault run: seed {seed}, {ns.minutes} minutes of faults", flush=True)
    with three_nodes_on_postgres("groupcoord-fault-run-") as cluster:
        run = fault_run(cluster, seed, ns.minutes * 60, lambda line: print(line, flush=True))
    figures = _figures(run)
    print(run.verdict.summary())
    print(json.dumps({k: v for k, v in figures.items() if k != "all_violations"}, indent=2))
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "cluster_fault_run.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if run.verdict.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
