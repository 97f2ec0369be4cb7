# make demo: set up and run the main job.  make test: set up and run the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT := kmc-out

.PHONY: demo test lint unit ci-suite campaigns system-deps java-deps kafka-jars kafka-server cluster-deps counterexamples diagrams bench clean sanitize fields

# The Kafka release whose classes the oracles call (`kmc conform`); its jars are fetched from Maven
# Central once, into oracles/java/lib/$(KAFKA_VERSION) (ignored by git).
KAFKA_VERSION ?= $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' oracles/java/pom.xml)
KAFKA_JARS := oracles/java/lib/$(KAFKA_VERSION)

# Debian packages the toolkit uses: graphviz (`dot`, for diagrams) and a JRE (PySpark, TLC);
# the tests also load the HTML report in headless Chromium.
NEED_CHROMIUM ?= no
# The Debian packages listed in $$missing: installed as root, otherwise the line to run is printed.
INSTALL_MISSING = if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing system packages; install them with: sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi
system-deps:
	@missing=""; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v java >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	if [ "$(NEED_CHROMIUM)" = yes ]; then command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; fi; \
	$(INSTALL_MISSING)

# A JDK and Maven, for Kafka's jars and the oracles that call them.
java-deps:
	@missing=""; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	$(INSTALL_MISSING)

kafka-jars: $(KAFKA_JARS)/.complete
$(KAFKA_JARS)/.complete: oracles/java/pom.xml
	@$(MAKE) --no-print-directory java-deps
	@echo "fetching Kafka $(KAFKA_VERSION)'s jars from Maven Central into $(KAFKA_JARS)"
	@rm -rf $(KAFKA_JARS).partial
	@case "$(KAFKA_VERSION)" in 0.*|1.*|2.*|3.[0-7]|3.[0-7].*) older=-Dkafka.before-3.8 ;; *) older= ;; esac; \
	cd oracles/java && mvn -q -B dependency:copy-dependencies -Dkafka.version=$(KAFKA_VERSION) $$older \
	  -DincludeScope=runtime -DoutputDirectory=lib/$(KAFKA_VERSION).partial \
	  || { echo "could not fetch Kafka $(KAFKA_VERSION)'s jars: is that release on Maven Central?" >&2; exit 1; }
	@rm -rf $(KAFKA_JARS) && mv $(KAFKA_JARS).partial $(KAFKA_JARS) && touch $@

# The Kafka broker the real-cluster campaigns start (the same release by default), fetched once into
# cluster/java/lib/$(KAFKA_VERSION) (ignored by git); another release (4.0 or later): KAFKA_VERSION=4.0.2.
kafka-server: $(STAMP)
	@$(MAKE) --no-print-directory java-deps
	@$(BIN)/python -m kmc.cluster.release $(KAFKA_VERSION)

# What the real-cluster tests need besides Java: iptables, for the network partitions between nodes
# (each node runs as a Unix user of its own, which needs root; without root those tests skip).
cluster-deps:
	@missing=""; \
	if [ "$$(id -u)" = 0 ]; then command -v iptables >/dev/null 2>&1 || missing="$$missing iptables"; fi; \
	$(INSTALL_MISSING)

# every C extension's sources and headers: a change to any rebuilds them (pip install)
C_SOURCES := $(shell find checker models -name "*.[ch]")

$(STAMP): pyproject.toml setup.py $(C_SOURCES)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# the distribution was called kmc before it took a PyPI name of its own: drop that one
	@$(BIN)/python -m pip uninstall -q -y kmc >/dev/null 2>&1 || true
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

demo: system-deps $(STAMP)
	@echo "== the ZooKeeper-era replication protocol before KIP-101: truncating to the HW loses data"
	$(BIN)/kmc check replication --preset truncate-to-hw --property StrongIsr --out $(OUT)/demo --no-progress \
	  || test $$? -eq 1
	$(BIN)/kmc replay $(OUT)/demo/truncate-to-hw-StrongIsr.itf.json
	$(BIN)/kmc render $(OUT)/demo/truncate-to-hw-StrongIsr.itf.json -o $(OUT)/demo/truncate-to-hw-StrongIsr.svg
	$(BIN)/kmc render $(OUT)/demo/truncate-to-hw-StrongIsr.itf.json -o $(OUT)/demo/truncate-to-hw-StrongIsr.html
	@echo "== open $(OUT)/demo/truncate-to-hw-StrongIsr.html for the step-by-step report"
	@echo "== the same bounds with the KIP-320 fixes: every property holds, every state explored"
	$(BIN)/kmc check replication --preset kip-320 --require-complete --no-progress

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# pytest runs in TEST_WORKERS processes, a test file per process at a time (pytest-xdist), so
# module-scoped fixtures such as a Spark cluster or the JVM start once per file; `kmc ci` runs as
# many suite entries at a time.
TEST_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

ci-suite: $(STAMP)
	$(BIN)/kmc ci counterexamples/suite.toml --junit $(OUT)/ci-junit.xml --jobs $(TEST_WORKERS)

# The real-cluster campaigns of counterexamples/campaigns.toml, one after another (about 4 minutes, as root).
campaigns: cluster-deps kafka-server
	$(BIN)/kmc ci counterexamples/campaigns.toml --junit $(OUT)/campaigns-junit.xml --jobs 1

test: NEED_CHROMIUM = yes
test: system-deps cluster-deps kafka-jars $(STAMP) kafka-server lint unit ci-suite

# Regenerate the checked-in shortest counterexamples from the models, and their diagrams.
counterexamples: $(STAMP)
	$(BIN)/kmc ci counterexamples/suite.toml --out counterexamples
	$(MAKE) diagrams

# The SVG beside every checked-in trace (a test fails when one is out of date).
diagrams: system-deps $(STAMP)
	@for trace in counterexamples/*/*.itf.json; do \
	  $(BIN)/kmc render "$$trace" -o "$${trace%.itf.json}.svg" || exit 1; \
	done

# The C twins' field numbers, generated from the models' NamedTuples (a test fails when they drift).
fields: $(STAMP)
	$(BIN)/python -m kmc.models.common.c_fields

# Every C twin's exhaustive comparison with its Python under AddressSanitizer and UBSan, then the
# twins built again as usual. Not in CI: the sanitizers' runtime must be preloaded into Python.
# -s: a sanitizer's report reaches the terminal before it aborts the run.
SANITIZER_RUNTIME = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)
sanitize: $(STAMP)
	$(BIN)/python -m kmc.models.common.build_twins --sanitize
	LD_PRELOAD="$(SANITIZER_RUNTIME)" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_replication_twin.py tests/test_kraft_replication_twin.py \
	  tests/test_kraft_quorum_twin.py tests/test_group_twin.py -k "not memory" \
	  || { $(BIN)/python -m kmc.models.common.build_twins; exit 1; }
	$(BIN)/python -m kmc.models.common.build_twins

bench: $(STAMP)
	$(BIN)/python benchmarks/replication_kip320.py

clean:
	rm -rf $(OUT) .pytest_cache .ruff_cache
