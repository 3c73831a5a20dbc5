# Everything a fresh machine needs: a venv with the Python deps, the Java client jars
# (fetched from PyPI, see tests/interop/README.md), and a check that Java 17+ is present.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JARS := .cache/jars
JAR_WHEEL := shigawire-apache-flink-libraries==2.0.0.post1

.PHONY: test demo venv jars java-check lint bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

java-check:
	@command -v java >/dev/null || { echo "Java 17+ is required (apt-get install openjdk-17-jdk-headless)"; exit 1; }
	@command -v javac >/dev/null || { echo "javac is required (apt-get install openjdk-17-jdk-headless)"; exit 1; }

jars: $(JARS)/kafka-clients.jar

$(JARS)/kafka-clients.jar: | venv
	mkdir -p $(JARS)/wheel
	$(PY) -m pip download -q --no-deps -d $(JARS)/wheel '$(JAR_WHEEL)'
	cd $(JARS) && unzip -q -o -j wheel/*.whl 'pyflink/lib/kafka-clients.jar' 'pyflink/lib/lz4-java.jar' \
	    'pyflink/lib/snappy-java.jar' 'pyflink/lib/zstd-jni.jar' 'pyflink/lib/slf4j-api.jar'
	rm -rf $(JARS)/wheel
	touch $@

test: venv java-check jars
	$(PY) -m pytest -q -p no:cacheprovider

lint: venv
	$(VENV)/bin/ruff check src tests tools bench
	$(VENV)/bin/mypy src/groupcoord

demo: venv
	$(PY) -m groupcoord demo

bench: venv
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) .cache data demo-out
