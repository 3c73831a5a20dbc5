# Everything a fresh machine needs: a venv with the Python deps, the Java client jars
# (4.4 from Maven Central, 3.9 from PyPI; see tests/interop/README.md), and a check that
# Java 17+ is present.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JARS := .cache/jars
JAR_WHEEL := shigawire-apache-flink-libraries==2.0.0.post1
JAR_NAMES := kafka-clients.jar lz4-java.jar snappy-java.jar zstd-jni.jar slf4j-api.jar
# Tests run in parallel, one file per worker at a time (module fixtures such as a reference
# broker start once): most of the suite waits on real clients and JVMs, so three workers keep
# two cores busy. `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= 3
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile
# The reference broker of the conformance suite (tests/conformance): Apache Kafka from Maven
# Central, its jars flattened into one directory that `java -cp '<dir>/*' kafka.Kafka` runs.
KAFKA_VERSION := 4.4.0
REFERENCE := .cache/kafka-$(KAFKA_VERSION)
MAVEN_REPO := .cache/m2
# Maven is installed (Debian's package, as root) only when a fetch needs it.
MVN_CHECK := command -v mvn >/dev/null \
    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y maven; }
# The Java client of the interop matrix (tests/interop/java): kafka-clients and its runtime
# dependencies from Maven Central. The 3.9 jars of `jars` stay for the share consumer's
# v0 RPCs (tests/helpers/java.py names both).
KAFKA_CLIENT_VERSION := $(KAFKA_VERSION)
CLIENT_JARS := .cache/kafka-clients-$(KAFKA_CLIENT_VERSION)
# Kafka's command-line tools (kafka-share-groups.sh and friends are classes of kafka-tools),
# run by interop tests against groupcoord.
KAFKA_TOOLS := .cache/kafka-tools-$(KAFKA_VERSION)

# klag-exporter (crates.io), the lag exporter whose figures the metrics endpoint must match
# (tests/interop/test_metrics_klag.py), stamped by version. Compiling it (librdkafka inside)
# takes 10-25 minutes on two cores, so it is built once per machine into the user's cache,
# like cargo's own registry, and copied into each checkout's .cache: a fresh clone (CI) does
# not compile it again. Building needs cargo and librdkafka's build dependencies (Debian
# packages, installed as root only when one is missing).
KLAG_VERSION := 0.1.29
KLAG := .cache/klag-exporter-$(KLAG_VERSION)
KLAG_BUILT := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/groupcoord/klag-exporter-$(KLAG_VERSION)
CARGO ?= $(shell command -v cargo 2>/dev/null || echo $$HOME/.cargo/bin/cargo)
KLAG_BUILD_DEPS := cmake g++ pkg-config libssl-dev libsasl2-dev libcurl4-openssl-dev zlib1g-dev

.PHONY: test test-fast interop demo cluster-demo wheel venv jars client-jars streams-jars java-check browser lint bench clean reference conformance kafka-tools prometheus postgresql klag-exporter client-suites

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	    || { echo "Python 3.11+ is required (set PYTHON=python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	@# Byte-compile once: brokers started by tests and benchmarks then skip compilation
	@# even where PYTHONDONTWRITEBYTECODE is set, which keeps start-up well under 0.5 s.
	$(PY) -m compileall -q src >/dev/null
	touch $@

java-check:
	@command -v java >/dev/null && command -v javac >/dev/null \
	    || { echo "Java 17+ with javac is required (apt-get install openjdk-17-jdk-headless)"; exit 1; }
	@v=$$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/'); [ "$$v" -ge 17 ] 2>/dev/null \
	    || { echo "javac 17+ is required, found: $$(javac -version 2>&1)"; exit 1; }

# The Kafka 3.9 Java client is taken from a PyPI wheel that bundles it (no Maven here); the
# stamp file records which wheel the jars came from, so changing JAR_WHEEL refetches.
jars: $(JARS)/.stamp

$(JARS)/.stamp: Makefile | venv
	rm -rf $(JARS) && mkdir -p $(JARS)/wheel
	$(PY) -m pip download -q --no-deps -d $(JARS)/wheel '$(JAR_WHEEL)'
	$(PY) -c 'import sys, zipfile, pathlib; z = zipfile.ZipFile(sys.argv[1]); \
	    [pathlib.Path(sys.argv[2], pathlib.Path(n).name).write_bytes(z.read(n)) for n in sys.argv[3:]]' \
	    $(JARS)/wheel/*.whl $(JARS) $(addprefix pyflink/lib/,$(JAR_NAMES))
	rm -rf $(JARS)/wheel
	cd $(JARS) && ls $(JAR_NAMES) >/dev/null
	echo '$(JAR_WHEEL)' > $@

# Stamped by version: a second run with the same KAFKA_VERSION does nothing. The Maven repo
# is kept beside it so a version bump downloads only what changed.
reference: $(REFERENCE)/.stamp

$(REFERENCE)/.stamp: tests/reference/pom.xml | java-check
	@$(MVN_CHECK)
	rm -rf $(REFERENCE) && mkdir -p $(REFERENCE)
	mvn -B -q -f tests/reference/pom.xml -Dmaven.repo.local=$(abspath $(MAVEN_REPO)) \
	    -Dkafka.version=$(KAFKA_VERSION) dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(abspath $(REFERENCE))/libs
	test -f $(REFERENCE)/libs/kafka_2.13-$(KAFKA_VERSION).jar
	echo '$(KAFKA_VERSION)' > $@

# The client alone, stamped by version like `reference` and sharing its Maven repo.
client-jars: $(CLIENT_JARS)/.stamp

$(CLIENT_JARS)/.stamp: tests/interop/java/pom.xml | java-check
	@$(MVN_CHECK)
	rm -rf $(CLIENT_JARS) && mkdir -p $(CLIENT_JARS)
	mvn -B -q -f tests/interop/java/pom.xml -Dmaven.repo.local=$(abspath $(MAVEN_REPO)) \
	    -Dkafka.version=$(KAFKA_CLIENT_VERSION) dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(abspath $(CLIENT_JARS))/libs
	test -f $(CLIENT_JARS)/libs/kafka-clients-$(KAFKA_CLIENT_VERSION).jar
	echo '$(KAFKA_CLIENT_VERSION)' > $@

# Kafka's tools, stamped by version like `reference` and sharing its Maven repo.
kafka-tools: $(KAFKA_TOOLS)/.stamp

$(KAFKA_TOOLS)/.stamp: tests/reference/tools/pom.xml | java-check
	@$(MVN_CHECK)
	rm -rf $(KAFKA_TOOLS) && mkdir -p $(KAFKA_TOOLS)
	mvn -B -q -f tests/reference/tools/pom.xml -Dmaven.repo.local=$(abspath $(MAVEN_REPO)) \
	    -Dkafka.version=$(KAFKA_VERSION) dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(abspath $(KAFKA_TOOLS))/libs
	test -f $(KAFKA_TOOLS)/libs/kafka-tools-$(KAFKA_VERSION).jar
	echo '$(KAFKA_VERSION)' > $@

# Kafka Streams 4.4 for the streams-group interop test (tests/interop/streams): kafka-streams
# and its runtime dependencies from Maven Central, stamped and fetched like `client-jars`.
STREAMS_JARS := .cache/kafka-streams-$(KAFKA_CLIENT_VERSION)

streams-jars: $(STREAMS_JARS)/.stamp

$(STREAMS_JARS)/.stamp: tests/interop/streams/pom.xml | java-check
	@$(MVN_CHECK)
	rm -rf $(STREAMS_JARS) && mkdir -p $(STREAMS_JARS)
	mvn -B -q -f tests/interop/streams/pom.xml -Dmaven.repo.local=$(abspath $(MAVEN_REPO)) \
	    -Dkafka.version=$(KAFKA_CLIENT_VERSION) dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(abspath $(STREAMS_JARS))/libs
	test -f $(STREAMS_JARS)/libs/kafka-streams-$(KAFKA_CLIENT_VERSION).jar
	echo '$(KAFKA_CLIENT_VERSION)' > $@

# Headless Chromium for the report rendering test; installed (as root, Debian packages) only
# when missing, so an existing install is never touched.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; }

# A real Prometheus server for the metrics tests (tests/helpers/prometheus_server.py), from
# Debian, installed only when missing (as `browser`).
prometheus:
	@command -v prometheus >/dev/null \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus; }

# A real PostgreSQL server for the PostgreSQL partition store's tests
# (tests/helpers/postgres_server.py), from Debian, installed only when missing (as
# `browser`). Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<version>/bin, off PATH.
postgresql:
	@{ command -v initdb >/dev/null && command -v pg_ctl >/dev/null; } \
	    || ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; }

klag-exporter: $(KLAG)/.stamp

$(KLAG)/.stamp: $(KLAG_BUILT)/.stamp
	rm -rf $(KLAG) && mkdir -p $(KLAG)/bin
	cp $(KLAG_BUILT)/bin/klag-exporter $(KLAG)/bin/
	echo '$(KLAG_VERSION)' > $@

$(KLAG_BUILT)/.stamp:
	@test -x "$(CARGO)" || { echo "cargo (Rust) is required to build klag-exporter"; exit 1; }
	@dpkg -s $(KLAG_BUILD_DEPS) >/dev/null 2>&1 \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(KLAG_BUILD_DEPS); }
	rm -rf $(KLAG_BUILT) && mkdir -p $(KLAG_BUILT)
	$(CARGO) install klag-exporter --version $(KLAG_VERSION) --locked --root $(KLAG_BUILT)
	test -x $(KLAG_BUILT)/bin/klag-exporter
	echo '$(KLAG_VERSION)' > $@

# The whole suite: unit, property, server, real-client interop and conformance tests.
test: venv java-check jars client-jars streams-jars browser reference kafka-tools prometheus postgresql klag-exporter
	$(PYTEST)

# Everything except the tests that need Java (real clients, Spark, the reference broker).
test-fast: venv
	$(PYTEST) -m 'not interop and not spark and not reference'

# The differential suite alone: every scenario against Apache Kafka and groupcoord.
conformance: venv java-check reference
	$(PYTEST) -m reference tests/conformance

# Client libraries' own integration tests against groupcoord and Kafka 4.4 side by side
# (docs/conformance.md#client-suites): franz-go's TestTxnEtl, three runs on each broker. Not part
# of `make test`. franz-go comes from the Go module proxy and is built into .cache; Go 1.26+
# must be installed (it is on the project's machines). CLIENT_SUITES_ARGS passes options,
# e.g. CLIENT_SUITES_ARGS='--broker groupcoord --runs 1', or '--tests kgo --runs 1' for every
# kgo test.
CLIENT_SUITES_ARGS ?=
client-suites: venv java-check reference
	@command -v go >/dev/null || { echo "Go 1.26+ is required"; exit 1; }
	$(PY) tools/client_suites.py $(CLIENT_SUITES_ARGS)

interop: venv java-check jars client-jars streams-jars kafka-tools prometheus postgresql klag-exporter
	$(PYTEST) -m interop tests/interop tests/testing

lint: venv
	$(VENV)/bin/ruff check src tests tools bench
	$(VENV)/bin/mypy src/groupcoord

demo: venv
	$(PY) -m groupcoord demo

# Three nodes on a throwaway PostgreSQL (docs/cluster.md), one killed, the group moving on.
cluster-demo: venv postgresql
	$(PY) -m groupcoord cluster-demo

# The package as a wheel in dist/ (`pip install dist/groupcoord-*.whl`, `...whl[spark]` for
# `groupcoord analyze`). pip builds it in an isolated environment of the build requirements
# (from PyPI); setuptools' scratch directories are removed after it.
wheel:
	rm -f dist/groupcoord-*.whl
	$(PYTHON) -m pip wheel -q --no-deps --wheel-dir dist .
	rm -rf build src/groupcoord.egg-info

bench: venv
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) .cache data demo-out cluster-demo-out tests/interop/java/build
